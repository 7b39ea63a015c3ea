/**
 * The service's health, as `GET /v1/health` reports it: up when the database answers within
 * 2 s. The api role serves it among its routes (discovery/routes.ts); a process without the api
 * role serves it alone on PORT (`serveHealth`), so that the container's healthcheck, and any
 * orchestrator's probe, asks every role the same question on the same port.
 */
import { Elysia, t, type Static } from 'elysia'
import pkg from '../../package.json'
import type { AppContext } from '../context'
import { errors } from '../errors'
import { envelope } from './envelope'
import { DATABASE_RETRY_SECONDS, toApiError } from './render-error'
import { serveHttp, type HttpServer } from './serve'
import { pingDatabase } from './health-queries'

const HEALTH_TIMEOUT_MS = 2_000

const Dependency = t.Object({
  status: t.Union([t.Literal('up'), t.Literal('down')]),
  latency_ms: t.Number(),
  error: t.Optional(t.String()),
})
export const Health = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('unavailable')]),
  version: t.String(),
  uptime_s: t.Integer(),
  dependencies: t.Object({ database: Dependency }),
})

async function checkDatabase(ctx: AppContext) {
  const started = performance.now()
  const latency = () => Math.round((performance.now() - started) * 100) / 100
  try {
    await Promise.race([pingDatabase(ctx.sql), new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), HEALTH_TIMEOUT_MS))])
    return { status: 'up' as const, latency_ms: latency() }
  } catch (error) {
    return { status: 'down' as const, latency_ms: latency(), error: error instanceof Error && error.message === 'timed out' ? 'timed out' : 'unreachable' }
  }
}

/** The health report; throws `database_unavailable` (503, Retry-After) carrying it when the database does not answer. */
export async function health(ctx: AppContext): Promise<Static<typeof Health>> {
  const database = await checkDatabase(ctx)
  const ok = database.status === 'up'
  const data = {
    status: ok ? ('ok' as const) : ('unavailable' as const),
    version: pkg.version,
    uptime_s: Math.floor((Date.now() - ctx.startedAt) / 1000),
    dependencies: { database },
  }
  if (ok) return data
  throw errors.retryLater('database_unavailable', `database: ${database.error ?? 'unreachable'}`, DATABASE_RETRY_SECONDS, {
    details: data,
    headers: { 'cache-control': 'no-store' },
  })
}

/** A listener answering `GET /v1/health` alone (anything else: the envelope's 404), for a process without the api role. */
export function serveHealth(ctx: AppContext, opts: { port: number; hostname: string }): Promise<HttpServer> {
  // the hook before the route: Elysia applies a hook to the routes added after it
  const app = new Elysia({ normalize: false })
    .onError(({ code, error, request, path }) => {
      const apiError = toApiError(code, error, request, path)
      return Response.json(apiError.toBody(ctx.config.siteUrl), { status: apiError.status, headers: apiError.headers })
    })
    .get('/v1/health', async ({ set }) => envelope(await health(ctx), set, false))
  return serveHttp(app, { ...opts, maxBodyBytes: 1024 })
}
