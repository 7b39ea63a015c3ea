/**
 * The service as a separate process (`bun src/index.ts`) on the test database, for what only a
 * real process shows: `kill -9` and SIGTERM. Its JSON log lines are collected as they come.
 */
import type { Subprocess } from 'bun'
import { TEST_SECRET } from './app'
import { testDatabase } from './database'

export interface ServiceProcess {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  apiPort?: number
  smtpPort?: number
  /** every log line so far, parsed */
  logs: Record<string, any>[]
  /** resolves with the first log line (past or future) that `match` accepts */
  waitForLog(match: (line: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>
  /** the exit code (a signal's death gives null code in Bun; `signalCode` says which) */
  exited: Promise<number>
}

const root = `${import.meta.dir}/../..`

/** Starts the service with the test configuration plus `env`; resolves once it logged `service started`. */
export async function spawnService(env: Record<string, string>, opts: { openFiles?: number } = {}): Promise<ServiceProcess> {
  const db = await testDatabase()
  // `openFiles`: the process's open-file limit (ulimit -n), set by the shell that becomes it
  const command = opts.openFiles ? ['sh', '-c', `ulimit -n ${opts.openFiles} && exec "$0" src/index.ts`, process.execPath] : [process.execPath, 'src/index.ts']
  const proc = Bun.spawn(command, {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      DATABASE_URL: db.url,
      SECRET_KEY: TEST_SECRET,
      PUBLIC_URL: 'http://api.test.local',
      MANAGED_DOMAIN: 'agents.test.local',
      HOST: '127.0.0.1',
      PORT: '0',
      SMTP_PORT: '0',
      LOG_LEVEL: 'info',
      // one process unless a test asks for more (src/smtp-processes.ts)
      SMTP_PROCESSES: '1',
      ...env,
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const logs: Record<string, any>[] = []
  const waiters = new Set<() => void>()
  void (async () => {
    let buffered = ''
    for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk
      let at: number
      while ((at = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, at)
        buffered = buffered.slice(at + 1)
        try {
          logs.push(JSON.parse(line))
        } catch {
          logs.push({ msg: line })
        }
      }
      for (const wake of waiters) wake()
    }
    for (const wake of waiters) wake()
  })()
  const service: ServiceProcess = {
    proc,
    logs,
    exited: proc.exited,
    async waitForLog(match, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = logs.find(match)
        if (found) return found
        if (proc.exitCode !== null || proc.signalCode !== null || Date.now() > deadline) {
          const stderr = await new Response(proc.stderr).text().catch(() => '')
          throw new Error(
            `service process: no such log line (${proc.exitCode ?? proc.signalCode ?? 'timeout'})\n${logs.map(l => JSON.stringify(l)).join('\n')}\n${stderr}`,
          )
        }
        await new Promise<void>(resolve => {
          const wake = () => (waiters.delete(wake), resolve())
          waiters.add(wake)
          setTimeout(wake, 100)
        })
      }
    },
  }
  const started = await service.waitForLog(l => l.msg === 'service started')
  service.apiPort = started.api_port
  service.smtpPort = started.smtp_port
  return service
}
