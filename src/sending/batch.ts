/**
 * POST /v1/send-mail/batch: up to 100 sends in one request, each checked and sent on its own
 * by the path of POST /v1/send-mail (its validation, gates, limits, approval holds), answered
 * in order with its send or its error. Each message is idempotent under a key derived from the
 * batch's (`<key>#<index>`), so a retry of a batch cut off midway sends none twice; the batch's
 * answer is recorded under its own key once all are done, and a retry answers it again as is.
 */
import { t, type Static } from 'elysia'
import type { OperationCall } from '../http/operation'
import { ApiError } from '../errors'
import { canonicalJson, recordedOutcome } from '../http/idempotency'
import { recordResponses } from '../http/idempotency-queries'
import { checkValue } from '../http/validation'
import { sha256 } from '../crypto'
import { log } from '../log'
import { ErrorSchema } from '../http/envelope'
import { SendMailBody, type SendMailRequest, SendResponse } from './model'

export const MAX_BATCH = 100
/** Messages of a batch in flight at once: the send path's group commit writes them together. */
const CONCURRENCY = 8

export const BatchBody = t.Object({
  messages: t.Array(t.Record(t.String(), t.Unknown(), { description: 'a send-mail request (the body of POST /v1/send-mail), checked on its own' }), {
    minItems: 1,
    maxItems: MAX_BATCH,
    description: `1 to ${MAX_BATCH} messages`,
  }),
})

export const BatchResult = t.Union([
  t.Object({
    success: t.Literal(true),
    status: t.Integer({
      description: '200, or 202 for a send held for approval (status pending_approval) or answered before its relay (Prefer: respond-async, status queued)',
    }),
    data: SendResponse,
  }),
  t.Object({
    success: t.Literal(false),
    status: t.Integer({ description: 'the HTTP status POST /v1/send-mail would have answered' }),
    error: ErrorSchema.properties.error,
  }),
])
type Result = Static<typeof BatchResult>

type SendOne = (call: OperationCall, body: SendMailRequest) => Promise<unknown>

/** Sends each of `messages` through `sendOne`, in order of the answer; replays a batch already answered under the call's key. */
export async function sendBatch(call: OperationCall, messages: unknown[], sendOne: SendOne): Promise<Result[]> {
  const { ctx, auth } = call
  const scope = `org:${auth.orgId}:send-mail-batch`
  const hash = sha256(canonicalJson(messages))
  const key = call.idempotencyKey
  if (key) {
    const recorded = await recordedOutcome<Result[]>(ctx.sql, ctx.keys, scope, key, hash)
    if (recorded) {
      call.header?.('idempotent-replayed', 'true')
      return recorded.data
    }
  }
  // without a key, as for one send: the same batch again is the same sends
  const base = key ?? `derived_batch_${hash.toString('base64url').slice(0, 32)}`
  const results: Result[] = new Array(messages.length)
  let next = 0
  const worker = async () => {
    for (let i = next++; i < messages.length; i = next++) results[i] = await sendAt(call, messages[i], `${base}#${i}`, i, sendOne)
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, messages.length) }, worker))
  if (key) await recordResponses(ctx.sql, [{ scope, key, requestHash: hash.toString('hex'), sealed: ctx.keys.encrypt(JSON.stringify(results)) }])
  return results
}

/** One message of a batch: its send, or its error as POST /v1/send-mail would answer it. */
async function sendAt(call: OperationCall, message: unknown, key: string, index: number, sendOne: SendOne): Promise<Result> {
  let status: 200 | 202 = 200
  try {
    // fields are named within the message, as POST /v1/send-mail names them: `from: must be an email address`
    const body = checkValue(SendMailBody, message, 'message')
    const data = await sendOne({ ...call, idempotencyKey: key, status: code => (status = code as 200 | 202), header: undefined }, body)
    return { success: true, status, data: data as Result extends { data: infer D } ? D : never }
  } catch (error) {
    const failure = error instanceof ApiError ? error : new ApiError('internal_error', 'internal error; the request id identifies it in our logs')
    if (!(error instanceof ApiError)) log.error('send-mail batch: a message failed', { error, index })
    return { success: false, status: failure.status, error: failure.toBody(call.ctx.config.siteUrl).error as never }
  }
}
