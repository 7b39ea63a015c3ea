/**
 * The CLI as a user runs it: `bin/agent-mail` as a subprocess, against the service running its
 * roles (api on a loopback port, the SMTP listener, and the worker when asked for) the way
 * `src/index.ts` starts them, with a test relay for outbound mail.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { createContext, type AppContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { memoryResolver } from '../../src/dns/resolver'
import { startRoles, type RunningRoles } from '../../src/roles'
import { relayOf } from '../../src/sending/relay'
import { TEST_SECRET, testConfig, testSql } from '../helpers/app'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { PLUGINS } from '../../src/plugins'

export const BIN = join(import.meta.dir, '../../bin/agent-mail')

export interface Run {
  code: number
  stdout: string
  stderr: string
}

export interface CliService {
  ctx: AppContext
  origin: string
  smtpPort: number
  relay: TestRelay
  /** the config directory the CLI keeps its login in (XDG_CONFIG_HOME) */
  home: string
  /** starts the CLI; env adds to (or blanks) the test environment */
  spawn(args: string[], opts?: { stdin?: string | 'pipe'; env?: Record<string, string> }): ReturnType<typeof Bun.spawn>
  /** runs the CLI to its end */
  cli(args: string[], opts?: { stdin?: string; env?: Record<string, string> }): Promise<Run>
  /** sends a message to the SMTP listener, as a remote server would */
  smtp(mail: { from: string; to: string; subject: string; text: string }): Promise<void>
  stop(): Promise<void>
}

async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

/** `outbox`: no relay; outbound mail stays in the local outbox (where test/helpers/identity reads verification codes). */
export async function cliService(opts: { worker?: boolean; outbox?: boolean; env?: Record<string, string> } = {}): Promise<CliService> {
  const relay = await startTestRelay()
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const ctx = createContext(
    testConfig({
      PUBLIC_URL: origin,
      PORT: String(port),
      HOST: '127.0.0.1',
      ...(!opts.outbox && { SMTP_RELAY_URL: relay.url }),
      RELAY_TIMEOUT_MS: '10000',
      SMTP_HOSTNAME: 'mx.test.local',
      SMTP_PORT: '0',
      SHUTDOWN_GRACE_MS: '1000',
      ...opts.env,
    }),
    await testSql(),
    new ServerKeys(TEST_SECRET),
    { plugins: PLUGINS, resolver: memoryResolver({}) },
  )
  const roles: RunningRoles = await startRoles(ctx, opts.worker ? ['api', 'smtp', 'worker'] : ['api', 'smtp'], { embedded: true })
  const home = mkdtempSync(join(tmpdir(), 'agent-mail-cli-'))
  const spawn: CliService['spawn'] = (args, o = {}) =>
    Bun.spawn([BIN, ...args], {
      env: { ...process.env, XDG_CONFIG_HOME: home, AGENT_MAIL_URL: origin, NO_COLOR: '1', AGENT_MAIL_API_KEY: '', AGENT_MAIL_PASSWORD: '', ...o.env },
      stdin: o.stdin === undefined ? 'ignore' : o.stdin === 'pipe' ? 'pipe' : new Blob([o.stdin]),
      stdout: 'pipe',
      stderr: 'pipe',
    })
  return {
    ctx,
    origin,
    smtpPort: roles.smtpPort!,
    relay,
    home,
    spawn,
    async cli(args, o = {}) {
      const p = spawn(args, o)
      const [stdout, stderr, code] = await Promise.all([
        new Response(p.stdout as ReadableStream).text(),
        new Response(p.stderr as ReadableStream).text(),
        p.exited,
      ])
      return { code, stdout, stderr }
    },
    async smtp(mail) {
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port: roles.smtpPort!, secure: false, ignoreTLS: true, name: 'client.sender.example' })
      try {
        await transport.sendMail(mail)
      } finally {
        transport.close()
      }
    },
    async stop() {
      await roles.stop()
      await relayOf(ctx).close()
      await relay.stop()
    },
  }
}

/** Reads a stream until `pattern` shows up; returns all that was read. The rest stays unread (use watch() to read on). */
export async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<string> {
  return watch(stream).until(pattern)
}

export interface Watched {
  /** everything read so far */
  readonly text: string
  /** resolves with everything read once `pattern` matches it; rejects if the stream ends first */
  until(pattern: RegExp): Promise<string>
  /** everything, once the stream has ended */
  all(): Promise<string>
}

/** Reads a stream to its end in the background, so a test can wait for a line and still get the whole text. */
export function watch(stream: ReadableStream<Uint8Array>): Watched {
  let text = ''
  let ended = false
  const waiters = new Set<() => void>()
  const finished = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true })
      for (const wake of waiters) wake()
    }
    ended = true
    for (const wake of waiters) wake()
    return text
  })()
  return {
    get text() {
      return text
    },
    async until(pattern) {
      for (;;) {
        if (pattern.test(text)) return text
        if (ended) throw new Error(`stream ended before ${pattern}: ${text}`)
        await new Promise<void>(resolve => {
          const wake = () => (waiters.delete(wake), resolve())
          waiters.add(wake)
        })
      }
    },
    all: () => finished,
  }
}
