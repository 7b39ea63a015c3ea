/**
 * One attempt at a delivery, shared by the delivery job (first sends and retries) and replays:
 * count the attempt, sign the stored event, POST it, record the outcome.
 */
import type { AppContext } from '../context'
import { cachedSigningSecrets } from '../account/webhook-secret'
import { postWebhook, type AttemptOutcome } from './dispatch'
import { attemptBody, type EmailEvent } from './payload'
import { signedHeaders } from './signing'
import { checkWebhookUrl } from './url-safety'

export type DeliveryStatus = 'pending' | 'delivered' | 'header_confirmed' | 'failed' | 'skipped_by_rules'

interface DeliveryRow {
  id: string
  org_id: string
  event_id: string
  status: DeliveryStatus
  endpoint_url: string
  payload: EmailEvent
  discarded: boolean
}

export interface AttemptResult {
  status: DeliveryStatus
  outcome?: AttemptOutcome
}

async function record(ctx: AppContext, id: string, status: DeliveryStatus, fields: { durationMs?: number; responseStatus?: number | null; error?: string | null; code?: string | null }) {
  await ctx.sql`
    update webhook_deliveries set status = ${status}, duration_ms = ${fields.durationMs ?? null}, response_status = ${fields.responseStatus ?? null},
           last_error = ${fields.error ?? null}, last_error_code = ${fields.code ?? null}, updated_at = now()
     where id = ${id}`
}

/**
 * Sends the delivery once. `last` says whether a failure is final (the delivery becomes
 * `failed`) or leaves it `pending` for another attempt; `replay` sends whatever its status.
 */
export async function attemptDelivery(ctx: AppContext, deliveryId: string, opts: { last: boolean; replay?: boolean }): Promise<AttemptResult> {
  const [d] = await ctx.sql<DeliveryRow[]>`
    select d.id, d.org_id, d.event_id, d.status, d.endpoint_url, d.payload, em.content_discarded_at is not null as discarded
      from webhook_deliveries d left join emails em on em.id = d.email_id
     where d.id = ${deliveryId}`
  if (!d) return { status: 'failed' }
  if (!opts.replay && d.status !== 'pending') return { status: d.status }
  if (d.discarded) {
    await record(ctx, d.id, 'failed', { error: 'the message content was discarded before delivery', code: 'content_discarded' })
    return { status: 'failed' }
  }
  // Count the attempt before sending: a crash after the POST still shows it.
  const [{ attempt_count: attempt }] = (await ctx.sql`
    update webhook_deliveries set attempt_count = attempt_count + 1, updated_at = now() where id = ${d.id} returning attempt_count`) as unknown as [{ attempt_count: number }]
  let target
  try {
    target = await checkWebhookUrl(d.endpoint_url, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK)
  } catch (error) {
    const message = `url refused at send time: ${(error as Error).message}`
    await record(ctx, d.id, opts.last ? 'failed' : 'pending', { error: message, code: opts.last ? 'queue_dead_letter' : 'url_refused' })
    return { status: opts.last ? 'failed' : 'pending' }
  }
  const body = attemptBody(d.payload, attempt, ctx.config.PUBLIC_URL, ctx.keys, d.org_id)
  const headers = signedHeaders(await cachedSigningSecrets(ctx.sql, ctx.keys, d.org_id), d.event_id, body)
  const outcome = await postWebhook(target, body, headers, ctx.config.WEBHOOK_TIMEOUT_MS, d.event_id)
  const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300
  if (ok) {
    const status = outcome.confirmed ? 'header_confirmed' : 'delivered'
    await record(ctx, d.id, status, { durationMs: outcome.durationMs, responseStatus: outcome.status })
    return { status, outcome }
  }
  const status = opts.last ? 'failed' : 'pending'
  const error = outcome.status !== null ? `endpoint answered HTTP ${outcome.status}` : outcome.message ?? 'no response'
  // A final failure without any HTTP answer is a dead letter: dispatch kept failing.
  const code = outcome.status !== null ? `http_${outcome.status}` : opts.last ? 'queue_dead_letter' : outcome.error ?? 'connection_failed'
  await record(ctx, d.id, status, { durationMs: outcome.durationMs, responseStatus: outcome.status, error, code })
  return { status, outcome }
}
