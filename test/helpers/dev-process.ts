/**
 * `make dev` as a real process: `src/dev.ts` on a scratch data directory and free ports, with
 * its output collected. Used by the tests of what a newcomer sees (banner, errors, walkthrough).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const REPO = join(import.meta.dir, '../..')

/** A port free on loopback right now (for a process that must be told its port up front). */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/** This PATH without the directories holding a `bun`: a machine where only make's .tools/ has Bun. */
export function pathWithoutBun(): string {
  return (process.env.PATH ?? '')
    .split(':')
    .filter(dir => !Bun.file(join(dir, 'bun')).size)
    .join(':')
}

export interface DevProcess {
  proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  /** the scratch directory; the data directory is `dir/.data` */
  dir: string
  dataDir: string
  apiPort: number
  smtpPort: number
  apiKey: string
  orgId: string
  output(): string
  /** SIGTERM and wait; removes the scratch directory unless `keep` */
  stop(opts?: { keep?: boolean }): Promise<number>
}

/** The environment a developer's shell would give `make dev`: no DATABASE_URL, no test settings. */
export function devEnv(env: Record<string, string | undefined>): Record<string, string> {
  const base: Record<string, string | undefined> = { ...process.env, DATABASE_URL: undefined, TEST_DATABASE_URL: undefined, LOG_LEVEL: 'warn', ...env }
  return Object.fromEntries(Object.entries(base).filter((e): e is [string, string] => e[1] !== undefined))
}

/** Runs `bun src/dev.ts` with `env` until it exits; for configurations that must not start. */
export async function runDevToExit(env: Record<string, string | undefined>, timeoutMs = 30_000) {
  const proc = Bun.spawn([process.execPath, 'src/dev.ts'], { cwd: REPO, env: devEnv(env), stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

async function collect(stream: ReadableStream<Uint8Array>, into: { text: string }) {
  const decoder = new TextDecoder()
  for await (const chunk of stream) into.text += decoder.decode(chunk, { stream: true })
}

/** Starts `src/dev.ts` and resolves once its banner is printed (or rejects with its output when it exits first). */
export async function startDev(env: Record<string, string | undefined> = {}, dir = mkdtempSync(join(tmpdir(), 'dev-'))): Promise<DevProcess> {
  const dataDir = join(dir, '.data')
  const proc = Bun.spawn([process.execPath, 'src/dev.ts'], {
    cwd: REPO,
    env: devEnv({ DATA_DIR: dataDir, PORT: '0', SMTP_PORT: '0', ...env }),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = { text: '' }
  void collect(proc.stdout, out)
  void collect(proc.stderr, out)
  const banner = /API +http:\/\/[^:]+:(\d+)\/v1[\s\S]*SMTP +[^:\s]+:(\d+)[\s\S]*API key +(svc_\S+)/
  const exited = proc.exited.then(code => ({ code }))
  for (;;) {
    const m = banner.exec(out.text)
    if (m) {
      const org = /organization +(\S+)/.exec(out.text)
      return {
        proc,
        dir,
        dataDir,
        apiPort: Number(m[1]),
        smtpPort: Number(m[2]),
        apiKey: m[3]!,
        orgId: org?.[1] ?? '',
        output: () => out.text,
        async stop(opts = {}) {
          proc.kill('SIGTERM')
          const code = await proc.exited
          if (!opts.keep) rmSync(dir, { recursive: true, force: true })
          return code
        },
      }
    }
    const done = await Promise.race([exited, Bun.sleep(50).then(() => null)])
    if (done) {
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`make dev exited with ${done.code} before its banner:\n${out.text}`)
    }
  }
}
