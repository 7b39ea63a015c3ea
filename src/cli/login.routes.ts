/** `cli login`: POST /v1/cli/login/start and /poll (public, v1 envelope) and the browser page /cli/device. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { clientScope, publicAccess } from '../http/auth'
import { Ok } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import { requestFacts } from '../request-context'
import { formRequestBody } from '../oauth/responses'
import { deviceSubmit, devicePage } from './device-page'
import { LoginTokens } from './model'
import { pollDeviceLogin, pollError, redeemDeviceLogin, startDeviceLogin } from './login.service'

const DeviceAuthorization = t.Object({
  device_code: t.String({ description: 'opaque; poll with it; shown only in this response' }),
  user_code: t.String({ description: 'XXXX-XXXX: the person enters or confirms it at verification_uri' }),
  verification_uri: t.String({ description: 'the browser page: {PUBLIC_URL}/cli/device' }),
  verification_uri_complete: t.String({ description: 'the same page with the user code filled in' }),
  expires_in: t.Integer({ description: 'seconds the codes stay valid (600)' }),
  interval: t.Integer({ description: 'seconds to wait between polls (5)' }),
})

const Name = (description: string) => t.Optional(t.String({ minLength: 1, maxLength: 100, description }))

const POLL_OUTCOMES =
  'Until the person decides: 400 authorization_pending. Polled sooner than `interval` seconds after the previous poll: 400 slow_down with Retry-After and details.interval (the interval grows by 5 seconds each time, RFC 8628). ' +
  'Denied in the browser: 403 access_denied. Unknown device code: 400 invalid_device_code. Expired, or already exchanged for tokens: 400 expired_token. ' +
  'Approved: 200 with the token set, exactly once (a retry with the Idempotency-Key of the successful poll, from the same client address, replays it).'

export function cliLoginRoutes(ctx: AppContext) {
  const api = new Elysia({ prefix: '/v1/cli/login', tags: ['CLI login'] })
    .use(publicAccess(ctx))
    .post(
      '/start',
      async ({ body, headers, set, request, server }) => {
        set.headers['cache-control'] = 'no-store'
        const key = idempotencyKeyOf(headers)
        const scope = clientScope(ctx, request, server, 'cli.login.start')
        const outcome = await idempotent(ctx.sql, ctx.keys, { scope, key, payload: body ?? {} }, async tx => ({
          status: 201,
          data: await startDeviceLogin(ctx, tx, body ?? {}),
        }))
        return applyOutcome(set, key, outcome)
      },
      {
        body: t.Optional(
          t.Object({
            client_name: Name('shown on the approval page, e.g. the CLI and its version'),
            device_name: Name('shown on the approval page, e.g. the host name'),
          }),
        ),
        response: { 201: Ok(DeviceAuthorization) },
        detail: {
          summary: 'Start a CLI login (device authorization)',
          security: [],
          description:
            'Public; the body is optional. Show user_code and verification_uri to the person, then poll POST /v1/cli/login/poll every `interval` seconds. Accepts Idempotency-Key (scoped to the caller).',
        },
      },
    )
    .post(
      '/poll',
      async ({ body, headers, set, request, server }) => {
        set.headers['cache-control'] = 'no-store'
        const key = idempotencyKeyOf(headers)
        const state = await pollDeviceLogin(ctx.sql, body.device_code)
        // A used-up code is still worth a look at the stored outcome when the client repeats its key.
        if (state.kind !== 'approved' && !(state.kind === 'consumed' && key)) throw pollError(state)
        const scope = clientScope(ctx, request, server, 'cli.login.poll')
        const outcome = await idempotent(ctx.sql, ctx.keys, { scope, key, payload: body }, async tx => ({
          status: 200,
          data: await redeemDeviceLogin(tx, body.device_code),
        }))
        return applyOutcome(set, key, outcome)
      },
      {
        body: t.Object({ device_code: t.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: Ok(LoginTokens) },
        detail: { summary: 'Poll a CLI login', security: [], description: POLL_OUTCOMES },
      },
    )

  const page = new Elysia({ prefix: '/cli', tags: ['CLI login'] })
    // the handlers answer with Responses of their own; the request log line should show their status
    .onAfterHandle(({ request, response }) => {
      if (response instanceof Response) requestFacts(request).status = response.status
    })
    .get('/device', ({ request, server }) => devicePage(ctx, request, server), {
      query: t.Object({ user_code: t.Optional(t.String({ description: 'prefills the code (verification_uri_complete)' })) }, { additionalProperties: true }),
      detail: {
        summary: 'CLI login approval page (HTML)',
        security: [],
        description: 'Sign in with email and password, enter or confirm the user code, choose an organization, approve or deny.',
      },
    })
    .post('/device', ({ request, body, server }) => deviceSubmit(ctx, request, body, server), {
      parse: 'text',
      detail: {
        summary: 'Submit the CLI login approval page (HTML form)',
        security: [],
        requestBody: formRequestBody(
          {
            page_id: { type: 'string' },
            csrf_token: { type: 'string' },
            user_code: { type: 'string' },
            email: { type: 'string' },
            password: { type: 'string' },
            org_id: { type: 'string' },
            action: { type: 'string', enum: ['continue', 'approve', 'deny'] },
          },
          ['page_id', 'csrf_token'],
        ),
      },
    })

  return new Elysia().use(api).use(page)
}
