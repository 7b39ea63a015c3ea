/**
 * The smtp role in several processes on one port. A process started with the smtp role and a
 * real PostgreSQL (DATABASE_URL) starts `SMTP_PROCESSES - 1` more processes of its own that run
 * the smtp role alone (`SMTP_CHILD`), all listening on SMTP_PORT with reusePort: the kernel
 * spreads new connections over them, and each has its own JavaScript thread for the parsing,
 * authentication and storing that bound one process's ingest. A message is stored and
 * committed before its `250` in whichever process took the connection, so a process that dies
 * loses only sessions in flight, whose clients were not told `250` and try again.
 *
 * An extra process that exits while the service runs is started again; one whose parent dies
 * sees its stdin close and shuts down. The embedded database (PGlite) takes one process only.
 */
import type { Subprocess } from 'bun'
import type { Config } from './config'
import { log } from './log'

const ENTRY = new URL('./index.ts', import.meta.url).pathname
/** How long a restarted process waits after its predecessor died (a crash loop stays slow). */
const RESTART_DELAY_MS = 1000
/** How long an extra process may take to start (migrations checked, listener bound). */
const START_TIMEOUT_MS = 30_000

export interface SmtpProcesses {
  /** the process ids of the extra processes, as they are now */
  pids(): number[]
  stop(): Promise<void>
}

/** Starts the extra smtp processes of `config` (none when it asks for one) on `port`; resolves once they listen. */
export async function startSmtpProcesses(config: Config, env: Record<string, string | undefined>, port: number): Promise<SmtpProcesses> {
  const children: (Subprocess | undefined)[] = []
  let stopping = false

  const spawn = (index: number): Promise<void> => {
    let ready!: () => void
    let failed!: (error: Error) => void
    const started = new Promise<void>((resolve, reject) => ((ready = resolve), (failed = reject)))
    const child = Bun.spawn([process.execPath, ENTRY], {
      env: { ...env, ROLES: 'smtp', SMTP_PORT: String(port), SMTP_CHILD: 'true', SMTP_PROCESSES: String(config.smtpProcesses) },
      // stdin stays open for the child's life: its end tells the child that this process is gone
      stdin: 'pipe',
      stdout: 'inherit',
      stderr: 'inherit',
      ipc: message => message === 'ready' && ready(),
    })
    children[index] = child
    const timer = setTimeout(() => failed(new Error(`smtp process ${index + 1} did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS)
    void child.exited.then(code => {
      clearTimeout(timer)
      failed(new Error(`smtp process ${index + 1} exited while starting (${child.signalCode ?? code})`))
      if (stopping || children[index] !== child) return
      log.warn('smtp process exited; starting it again', { pid: child.pid, code, signal: child.signalCode })
      setTimeout(() => !stopping && spawn(index).catch(error => log.error('smtp process did not start', { error })), RESTART_DELAY_MS)
    })
    return started.finally(() => clearTimeout(timer))
  }

  const extra = config.smtpProcesses - 1
  try {
    await Promise.all(Array.from({ length: extra }, (_, i) => spawn(i)))
  } catch (error) {
    stopping = true
    for (const child of children) child?.kill(9)
    throw error
  }
  if (extra > 0) log.info('smtp processes started', { processes: config.smtpProcesses, port, pids: children.map(c => c!.pid) })

  return {
    pids: () => children.map(c => c!.pid),
    async stop() {
      stopping = true
      // each drains its sessions within its own SHUTDOWN_GRACE_MS
      for (const child of children) child?.kill('SIGTERM')
      await Promise.all(children.map(c => c?.exited))
    },
  }
}

/** In an extra smtp process: tells the parent it listens, and shuts down when the parent is gone. */
export function serveParent(shutdown: () => Promise<void>) {
  process.send?.('ready')
  void (async () => {
    for await (const _ of Bun.stdin.stream());
    log.warn('parent process gone: shutting down')
    await shutdown()
    process.exit(0)
  })()
}
