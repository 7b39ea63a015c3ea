/**
 * POST /v1/endpoints/{id}/test: a synthetic `email.received` event, signed exactly like a real
 * delivery, sent now. Limits: 30 per hour per organization, and 4 per minute of the tests that
 * failed and did not target a URL on one of the organization's verified domains.
 */
import { coveredByVerifiedDomain } from '../domains/queries'
import { randomUUIDv7 } from 'bun'
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { cachedSigningSecrets } from '../account/webhook-secret'
import { authenticated } from '../http/auth'
import { Ok } from '../http/envelope'
import { type ApiError, errors } from '../errors'
import { postWebhook } from '../egress/checked-fetch'
import { signedHeaders } from './signing'
import { checkWebhookUrl } from '../egress/url-safety'
import { IdParams } from '../http/schema'
import { endpointTarget } from './endpoint-queries'
import { insertEndpointTest, lockEndpointTests, recentEndpointTests, uncountEndpointTest } from './endpoint-test-queries'

export const TESTS_PER_MINUTE = 4
export const TESTS_PER_HOUR = 30
const BODY_PREVIEW_BYTES = 1024

function limited(what: string, retryAfter: number): ApiError {
  return errors.retryLater('rate_limited', `endpoint tests: at most ${what}`, retryAfter)
}

/** Takes a test slot (counted per minute until the test proves it should not be), or throws 429. */
async function takeTestSlot(ctx: AppContext, orgId: string): Promise<string> {
  return ctx.sql.begin(async tx => {
    await lockEndpointTests(tx, orgId)
    const counts = await recentEndpointTests(tx, orgId)
    if (counts.hour >= TESTS_PER_HOUR) throw limited(`${TESTS_PER_HOUR} per hour`, 60)
    if (counts.minute >= TESTS_PER_MINUTE) throw limited(`${TESTS_PER_MINUTE} failed tests per minute`, 60)
    return insertEndpointTest(tx, orgId)
  })
}

function syntheticEvent(eventId: string, address: string) {
  const now = new Date().toISOString()
  return {
    event: 'email.received',
    id: eventId,
    created_at: now,
    test: true,
    delivery: { attempt: 1 },
    email: {
      id: randomUUIDv7(),
      thread_id: randomUUIDv7(),
      received_at: now,
      size_bytes: 0,
      headers: {
        from: 'Test Sender <test@example.com>',
        to: address,
        cc: null,
        reply_to: null,
        subject: 'Test delivery',
        date: now,
        message_id: `<${eventId}@test>`,
        in_reply_to: null,
        references: [],
      },
      parsed: {
        from: { address: 'test@example.com', name: 'Test Sender' },
        to: [{ address, name: '' }],
        cc: [],
        reply_to: [],
        body_text: 'This is a test delivery.',
        body_html: null,
        attachments: [],
      },
      envelope: { mail_from: 'test@example.com', rcpt_to: [address] },
      authentication: { spf: { result: 'none' }, dkim: [], dmarc: { result: 'none' }, arc: { result: 'none' } },
    },
  }
}

export function endpointTestRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/endpoints', tags: ['Webhook endpoints'] }).use(authenticated(ctx)).post(
    '/:id/test',
    async ({ auth, params }) => {
      const endpoint = await endpointTarget(ctx.sql, auth.orgId, params.id)
      if (!endpoint) throw errors.notFound('endpoint')
      if (endpoint.kind !== 'http' || !endpoint.url)
        throw errors.conflict('endpoint: test sends are for HTTP endpoints; test a function with POST /v1/functions/{id}/test')
      const target = await checkWebhookUrl(endpoint.url, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK)
      const slot = await takeTestSlot(ctx, auth.orgId)
      const eventId = `evt_test_${randomUUIDv7().replaceAll('-', '')}`
      const body = JSON.stringify(syntheticEvent(eventId, `test@${ctx.config.MANAGED_DOMAIN}`))
      const headers = signedHeaders(await cachedSigningSecrets(ctx, auth.orgId), eventId, body)
      const outcome = await postWebhook(target, body, headers, ctx.config.WEBHOOK_TIMEOUT_MS, eventId)
      const verified = await coveredByVerifiedDomain(ctx.sql, auth.orgId, target.url.hostname)
      if (outcome.ok || verified) await uncountEndpointTest(ctx.sql, slot)
      return {
        event_id: eventId,
        status: outcome.status,
        body: outcome.body.slice(0, BODY_PREVIEW_BYTES),
        signature: headers['service-signature']!,
        duration_ms: outcome.durationMs,
        error: outcome.message ?? null,
      }
    },
    {
      params: IdParams,
      response: {
        200: Ok(
          t.Object({
            event_id: t.String(),
            status: t.Union([t.Integer(), t.Null()], { description: 'the HTTP status the endpoint answered; null when it did not answer' }),
            body: t.String({ description: `the first ${BODY_PREVIEW_BYTES} bytes of its answer` }),
            signature: t.String({ description: 'the exact Service-Signature header value sent' }),
            duration_ms: t.Integer(),
            error: t.Union([t.String(), t.Null()]),
          }),
        ),
      },
      detail: {
        summary: 'Send a signed test event to an endpoint',
        description: `HTTP endpoints only. ${TESTS_PER_HOUR} per hour and ${TESTS_PER_MINUTE} per minute per organization; successful tests and tests to a URL on a verified domain do not count against the per-minute limit.`,
      },
    },
  )
}
