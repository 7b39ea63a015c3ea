/**
 * Attempts at deliveries, shared by the delivery job (first sends and retries) and replays:
 * count the attempt, sign the stored event, POST it, record the outcome. The reads and writes
 * are set-based: the deliveries claimed together are loaded and counted in one statement, and
 * the outcomes of attempts that finish together are recorded in one (group commit).
 */
import { perProcess, type AppContext } from '../context'
import { GroupCommit } from '../db/group-commit'
import { recordChanges } from '../changes/record'
import { mailEvents } from '../events'
import { cachedSigningSecrets } from '../account/webhook-secret'
import { postWebhook, type AttemptOutcome } from '../egress/checked-fetch'
import { attemptBody } from './payload'
import { signedHeaders } from './signing'
import { checkWebhookUrl, type CheckedUrl } from '../egress/url-safety'
import { FUNCTION_URL_PREFIX } from './endpoints.service'
import { type AttemptRow, countAttempts, type DeliveryOutcome, type DeliveryStatus, recordOutcomes } from './delivery-queries'

export interface AttemptResult {
  status: DeliveryStatus
  outcome?: AttemptOutcome
}

interface AttemptOptions {
  /** a failure is final: the delivery becomes `failed` instead of staying `pending` for another attempt */
  last: boolean
  /** send whatever the delivery's status */
  replay?: boolean
}

/**
 * Loads the deliveries and counts an attempt at each one that is to be sent (pending, or any
 * status for a replay, and its content not discarded), before sending: a crash after the POST
 * still shows the attempt.
 */
export async function beginAttempts(ctx: AppContext, ids: string[], opts: { replay?: boolean } = {}): Promise<Map<string, AttemptRow>> {
  const rows = await countAttempts(ctx.sql, ids, opts.replay ?? false)
  return new Map(rows.map(row => [row.id, row]))
}

/** Sends a delivery `beginAttempts` loaded once, and records the outcome. */
export async function sendAttempt(ctx: AppContext, d: AttemptRow | undefined, opts: AttemptOptions): Promise<AttemptResult> {
  if (!d) return { status: 'failed' }
  if (!opts.replay && d.status !== 'pending') return { status: d.status }
  if (d.discarded) {
    await record(ctx, { id: d.id, status: 'failed', error: 'the message content was discarded before delivery', code: 'content_discarded' })
    return { status: 'failed' }
  }
  if (d.endpoint_url.startsWith(FUNCTION_URL_PREFIX)) return sendToFunction(ctx, d, opts)
  let target: CheckedUrl
  try {
    target = await checkWebhookUrl(d.endpoint_url, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK)
  } catch (error) {
    const status = opts.last ? 'failed' : 'pending'
    await record(ctx, {
      id: d.id,
      status,
      error: `url refused at send time: ${(error as Error).message}`,
      code: opts.last ? 'queue_dead_letter' : 'url_refused',
    })
    return { status }
  }
  const body = attemptBody(d.payload, d.attempt_count!, ctx.config.PUBLIC_URL, ctx.keys, d.org_id)
  const headers = signedHeaders(await cachedSigningSecrets(ctx, d.org_id), d.event_id, body)
  const outcome = await postWebhook(target, body, headers, ctx.config.WEBHOOK_TIMEOUT_MS, d.event_id)
  if (outcome.ok) {
    const status = outcome.confirmed ? 'header_confirmed' : 'delivered'
    await record(ctx, { id: d.id, status, durationMs: outcome.durationMs, responseStatus: outcome.status })
    return { status, outcome }
  }
  const status = opts.last ? 'failed' : 'pending'
  const error = outcome.status !== null ? `endpoint answered HTTP ${outcome.status}` : (outcome.message ?? 'no response')
  // A final failure without any HTTP answer is a dead letter: dispatch kept failing.
  const code = outcome.status !== null ? `http_${outcome.status}` : opts.last ? 'queue_dead_letter' : (outcome.error ?? 'connection_failed')
  await record(ctx, { id: d.id, status, durationMs: outcome.durationMs, responseStatus: outcome.status, error, code })
  return { status, outcome }
}

/** What became of a delivery to a function endpoint, in the terms of a delivery. */
export interface FunctionAttempt {
  ok: boolean
  confirmed: boolean
  /** the status the function answered, when it answered */
  status: number | null
  durationMs: number
  code?: string
  error?: string
}

/**
 * Runs the function of an endpoint (`endpointUrl`: function://<id>) on a signed event: the seam
 * the functions feature plugs into (src/plugins.ts), so that webhooks need not know how
 * functions run.
 */
export type FunctionDelivery = (
  ctx: AppContext,
  d: { id: string; orgId: string; endpointUrl: string; eventId: string; emailId: string },
  body: string,
  headers: Record<string, string>,
) => Promise<FunctionAttempt>

declare module '../context' {
  interface Plugins {
    /** delivers a webhook event to an endpoint of kind function */
    readonly deliverToFunction: FunctionDelivery
  }
}

/**
 * An attempt at a function endpoint: the function receives the body and signature headers an
 * HTTP endpoint gets. A 2xx answer delivers; a non-2xx one is `http_<status>`; a run that
 * exceeded its wall clock is `function_timeout`, any other failed run `function_<outcome>`.
 */
async function sendToFunction(ctx: AppContext, d: AttemptRow, opts: AttemptOptions): Promise<AttemptResult> {
  const body = attemptBody(d.payload, d.attempt_count!, ctx.config.PUBLIC_URL, ctx.keys, d.org_id)
  const headers = signedHeaders(await cachedSigningSecrets(ctx, d.org_id), d.event_id, body)
  const outcome = await ctx.plugins.deliverToFunction(
    ctx,
    { id: d.id, orgId: d.org_id, endpointUrl: d.endpoint_url, eventId: d.event_id, emailId: d.payload.email.id },
    body,
    headers,
  )
  if (outcome.ok) {
    const status = outcome.confirmed ? 'header_confirmed' : 'delivered'
    await record(ctx, { id: d.id, status, durationMs: outcome.durationMs, responseStatus: outcome.status })
    return { status }
  }
  const status = opts.last ? 'failed' : 'pending'
  await record(ctx, { id: d.id, status, durationMs: outcome.durationMs, responseStatus: outcome.status, error: outcome.error, code: outcome.code })
  return { status }
}

/** One attempt at one delivery, now (replays). */
export async function attemptDelivery(ctx: AppContext, deliveryId: string, opts: AttemptOptions): Promise<AttemptResult> {
  const begun = await beginAttempts(ctx, [deliveryId], opts)
  return sendAttempt(ctx, begun.get(deliveryId), opts)
}

/**
 * Outcomes that finish while an update is in flight are recorded together in the next one. Two
 * outcomes of one delivery in a batch (a replay beside its job's attempt): the later one stands.
 */
const recorders = perProcess(
  ctx =>
    new GroupCommit<DeliveryOutcome, void>(async outcomes => {
      const { sql } = ctx
      const latest = [...new Map(outcomes.map(o => [o.id, o])).values()]
      // The outcomes and their changes in the feed commit together; a retry still pending is not a change.
      const settled = await sql.begin(async tx => {
        const rows = await recordOutcomes(tx, latest)
        const final = rows.filter(r => r.status !== 'pending')
        await recordChanges(
          tx,
          final.map(r => ({
            orgId: r.org_id,
            type: 'delivery.status_changed',
            resource: { type: 'delivery', id: r.id },
            data: {
              status: r.status,
              email_id: r.email_id,
              endpoint_id: r.endpoint_id,
              event_id: r.event_id,
              attempt_count: r.attempt_count,
              last_error_code: r.last_error_code,
            },
          })),
        )
        return final
      })
      for (const org of new Set(settled.map(r => r.org_id))) mailEvents(ctx).emitChange(org)
      return outcomes.map(() => undefined)
    }),
)

function record(ctx: AppContext, outcome: DeliveryOutcome): Promise<void> {
  return recorders(ctx).submit(outcome)
}
