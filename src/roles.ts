/**
 * Starts the roles a process runs (api, smtp, worker) and stops them gracefully: every role stops
 * taking new work at once, what is in flight shares one grace period (SHUTDOWN_GRACE_MS), and
 * the jobs still running at its end are handed back (docs/jobs.md).
 */
import type { createApp } from './app'
import type { AppContext } from './context'
import { serveApiCallsWith } from './functions/guest-fetch'
import { largestBodyLimit } from './http/boundary'
import { inlineSettled, releaseInline } from './jobs/run'
import { serveHttp, type HttpServer } from './http/serve'
import { serveHealth } from './http/health'
import { MAX_WAIT_SECONDS } from './emails/model'
import { MAX_CHANGES_WAIT_SECONDS } from './changes/model'
import { startWorker, type Worker } from './jobs/worker'
import { log } from './log'
import { inboundHooks } from './mail/inbound/smtp-hooks'
import { inboundThreads } from './mail/inbound/threads'
import { startSmtpServer } from './smtp/server'
import type { SmtpServerOptions } from './smtp/types'
import type { Config, Role } from './config'
import { readFileSync } from 'node:fs'
import { mailEvents } from './events'
import { eventStreams } from './changes/stream'
import { closeSettlementSql } from './x402/settlement-connections'

export function smtpOptions(config: Config): SmtpServerOptions {
  const tls =
    config.SMTP_TLS_CERT_FILE && config.SMTP_TLS_KEY_FILE
      ? { cert: readFileSync(config.SMTP_TLS_CERT_FILE, 'utf8'), key: readFileSync(config.SMTP_TLS_KEY_FILE, 'utf8') }
      : undefined
  return {
    hostname: config.SMTP_HOSTNAME,
    host: config.HOST,
    port: config.SMTP_PORT,
    maxMessageBytes: config.SMTP_MAX_MESSAGE_BYTES,
    maxRecipients: config.SMTP_MAX_RECIPIENTS,
    maxConnections: config.SMTP_MAX_CONNECTIONS,
    maxBadCommands: 10,
    idleTimeoutMs: 5 * 60_000, // RFC 5321 4.5.3.2: at least 5 minutes
    tls,
    // several processes share the port (src/smtp-processes.ts)
    reusePort: config.smtpProcesses > 1,
  }
}

/** The longest a request may wait for something to happen: a long-poll's `wait` at its maximum. */
export const LONGEST_WAIT_MS = Math.max(MAX_WAIT_SECONDS, MAX_CHANGES_WAIT_SECONDS) * 1000
/** The end of the shutdown's grace kept for long-polls to answer with what they have (their last read). */
const LONG_POLL_ANSWER_MS = 1_000

/** What a request may take on top of its wait (the reads before and after it). */
const REQUEST_TIMEOUT_MARGIN_MS = 30_000

export interface RunningRoles {
  apiPort?: number
  api?: HttpServer
  /** the port of the health listener of a process without the api role (GET /v1/health) */
  healthPort?: number
  smtpPort?: number
  worker?: Worker
  stop(): Promise<void>
}

export async function startRoles(ctx: AppContext, roles: Role[], opts: { embedded: boolean }): Promise<RunningRoles> {
  const stops: (() => Promise<void>)[] = []
  const running: RunningRoles = { stop: async () => {} }
  const grace = ctx.config.SHUTDOWN_GRACE_MS
  // One application per process: the api role serves it, and functions call it in-process (in a
  // process without the api role, it is built when a function first calls the API).
  let app: ReturnType<typeof createApp> | undefined
  const appOf = async () => (app ??= (await import('./app')).createApp(ctx))
  serveApiCallsWith(ctx, async () => {
    const built = await appOf()
    return request => built.handle(request)
  })

  if (roles.includes('worker')) {
    // loaded by the roles that run them: a process of the smtp role alone (SMTP_PROCESSES) starts
    // without building the API and its MCP tools, or loading every job's feature
    const { JOB_KINDS } = await import('./job-kinds')
    const worker = await startWorker(ctx, { kinds: JOB_KINDS, listen: !opts.embedded, pollMs: opts.embedded ? 250 : 1000 })
    running.worker = worker
    stops.push(() => worker.stop(grace))
  }
  if (roles.includes('smtp')) {
    const smtp = await startSmtpServer(smtpOptions(ctx.config), inboundHooks(ctx))
    running.smtpPort = smtp.port
    stops.push(() => smtp.stop(grace))
  }
  if (roles.includes('api')) {
    if (!opts.embedded) await mailEvents(ctx).listen(ctx.sql)
    const app = await appOf()
    const server = await serveHttp(app, {
      port: ctx.config.PORT,
      hostname: ctx.config.HOST,
      // Our own parser answers 413 in the envelope up to twice the largest route limit; past that the listener cuts the body off.
      maxBodyBytes: 2 * largestBodyLimit(app, ctx.config.MAX_BODY_BYTES),
      requestTimeoutMs: LONGEST_WAIT_MS + REQUEST_TIMEOUT_MARGIN_MS,
    })
    running.api = server
    running.apiPort = server.port
    log.info('api listening', { port: running.apiPort })
    stops.push(async () => {
      // stop(false): stop accepting, let in-flight requests finish. Long-polls wait for mail until
      // the last LONG_POLL_ANSWER_MS of the grace, then answer with what they have; only what is
      // still running after the grace is cut off.
      // event streams end at once: their clients reconnect elsewhere with Last-Event-ID, losing nothing
      eventStreams(ctx).endAll()
      const graceEnds = Date.now() + grace
      const stopped = server.stop(false).then(() => true)
      const answerAt = Math.max(0, grace - LONG_POLL_ANSWER_MS)
      if (!(await Promise.race([stopped, Bun.sleep(answerAt).then(() => false)]))) {
        mailEvents(ctx).endWaits()
        const finished = await Promise.race([stopped, Bun.sleep(grace - answerAt).then(() => false)])
        if (!finished) await server.stop(true)
      }
      // long-polls are answered by now: their wake-ups can go
      await mailEvents(ctx).close()
      // a send answered before its relay finishes relaying within the grace, so a worker does not relay it again
      await inlineSettled(ctx, graceEnds - Date.now())
      // a request cut off while running its job (runNow) hands it back like the worker does
      const released = await releaseInline(ctx)
      if (released > 0) log.info('inline jobs handed back', { released_jobs: released })
    })
  }
  if (!roles.includes('api') && !ctx.config.SMTP_CHILD) {
    // A process without the api role answers its health on PORT all the same, so that one
    // healthcheck (the container's) fits every role. The extra smtp processes do not: the one
    // that started them answers for them, and they share its ports.
    const server = await serveHealth(ctx, { port: ctx.config.PORT, hostname: ctx.config.HOST })
    running.healthPort = server.port
    log.info('health listening', { port: server.port })
    stops.push(() => server.stop(true))
  }
  // In parallel, not one role after another: the SMTP listener must not accept sessions, nor the
  // worker claim jobs, while HTTP requests drain; and the whole stop takes one grace period.
  running.stop = async () => {
    await Promise.all(stops.map(stop => stop()))
    // no settlement is in flight once the api and the worker have stopped
    await closeSettlementSql(ctx)
    inboundThreads(ctx).stop()
  }
  return running
}
