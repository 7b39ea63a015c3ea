/**
 * A webhook delivery to a function endpoint, as the delivery attempt sees it (the seam
 * `FunctionDelivery` of webhooks/attempt.ts): invoke the function on the signed event and say
 * what became of it, in the terms of a delivery.
 */
import { CONFIRMATION_HEADER } from '../egress/checked-fetch'
import type { FunctionDelivery } from '../webhooks/attempt'
import { FUNCTION_URL_PREFIX } from '../webhooks/endpoints.service'
import { invokeFunction } from './run'

/** The request URL a function sees for a delivery. */
export const deliveryUrl = (functionId: string) => `https://functions.internal/${functionId}`

/** Plugged into webhook deliveries by src/plugins.ts. */
export const invokeForDelivery: FunctionDelivery = async (ctx, d, body, headers) => {
  const functionId = d.endpointUrl.slice(FUNCTION_URL_PREFIX.length)
  const started = performance.now()
  const invocation = await invokeFunction(ctx, {
    orgId: d.orgId,
    functionId,
    deliveryId: d.id,
    emailId: d.emailId,
    request: {
      method: 'POST',
      url: deliveryUrl(functionId),
      headers: [['content-type', 'application/json'], ['user-agent', 'agent-mail-webhooks/1'], ...Object.entries(headers)],
      body: Buffer.from(body).toString('base64'),
    },
  })
  const durationMs = Math.round(performance.now() - started)
  if (!invocation)
    return {
      ok: false,
      confirmed: false,
      status: null,
      durationMs,
      code: 'function_unavailable',
      error: 'the function was deleted or has no current deployment',
    }
  const r = invocation.result
  if (r.outcome === 'ok' && r.response) {
    const status = r.response.status
    if (status >= 200 && status <= 299) {
      const confirmed = r.response.headers.some(([k, v]) => k === CONFIRMATION_HEADER && v === d.eventId)
      return { ok: true, confirmed, status, durationMs }
    }
    return {
      ok: false,
      confirmed: false,
      status,
      durationMs,
      code: `http_${status}`,
      error: `function answered HTTP ${status} (invocation ${invocation.invocationId})`,
    }
  }
  const code = r.outcome === 'exceeded_wall_clock' ? 'function_timeout' : `function_${r.outcome}`
  const reason = r.error ? `${r.error.name}: ${r.error.message}` : r.outcome
  return {
    ok: false,
    confirmed: false,
    status: null,
    durationMs,
    code,
    error: `${r.outcome}: ${reason} (invocation ${invocation.invocationId})`.slice(0, 2000),
  }
}
