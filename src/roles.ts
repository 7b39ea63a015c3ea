/**
 * Starts the roles a process runs (api, smtp, worker) and stops them in the order a graceful
 * shutdown needs: stop accepting, finish what is in flight, hand back claimed jobs.
 */
import type { AppContext } from './context'
import type { Role } from './config'
import { createApp } from './app'
import { startWorker, type Worker } from './jobs/worker'
import { log } from './log'

export interface RunningRoles {
  apiPort?: number
  smtpPort?: number
  worker?: Worker
  stop(): Promise<void>
}

export async function startRoles(ctx: AppContext, roles: Role[], opts: { embedded: boolean }): Promise<RunningRoles> {
  const stops: (() => Promise<void>)[] = []
  const running: RunningRoles = { stop: async () => {} }
  const grace = ctx.config.SHUTDOWN_GRACE_MS

  if (roles.includes('worker')) {
    const worker = await startWorker(ctx, { listen: !opts.embedded, pollMs: opts.embedded ? 250 : 1000 })
    running.worker = worker
    stops.push(() => worker.stop(grace))
  }
  if (roles.includes('api')) {
    const app = createApp(ctx).listen({
      port: ctx.config.PORT,
      hostname: ctx.config.HOST,
      // Our own parser answers 413 in the envelope up to twice the limit; past that Bun cuts the body off.
      maxRequestBodySize: ctx.config.MAX_BODY_BYTES * 2,
    })
    running.apiPort = app.server!.port
    log.info('api listening', { port: running.apiPort })
    // stop(false): stop accepting, let in-flight requests finish
    stops.unshift(async () => {
      await Promise.race([app.server!.stop(false), Bun.sleep(grace)])
    })
  }
  running.stop = async () => {
    for (const stop of stops) await stop()
  }
  return running
}
