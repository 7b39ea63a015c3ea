/** Agent signup: POST /v1/agent/signup/start, /resend and /verify (public). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { publicAccess } from '../http/auth'
import { Ok } from '../http/envelope'
import { handleResend, handleStart, handleVerify } from '../signups/handlers'
import { Email, SignupResent, SignupStarted, SignupToken, SignupTokens, TermsAccepted, VerificationCode } from '../cli/model'
import { completeAgentSignup } from './signup.service'

export function agentSignupRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/agent/signup', tags: ['Agent signup'] })
    .use(publicAccess(ctx))
    .post(
      '/start',
      ({ body, headers, set, request, server }) => handleStart(ctx, 'agent', { body, headers, set, request, server }, { deviceName: body.device_name }),
      {
        body: t.Object({
          email: Email,
          terms_accepted: TermsAccepted,
          device_name: t.String({ minLength: 1, maxLength: 100, description: 'names the agent (its host or runtime)' }),
        }),
        response: { 201: Ok(SignupStarted) },
        detail: {
          summary: 'Start an agent signup: emails a 6-digit verification code',
          security: [],
          description:
            'Public. 429 rate_limit_exceeded past 10 requests a minute, or 10 signups a day, for one email address. Accepts Idempotency-Key (scoped to the caller).',
        },
      },
    )
    .post('/resend', ({ body, headers, set, request, server }) => handleResend(ctx, 'agent', { body, headers, set, request, server }), {
      body: t.Object({ signup_token: SignupToken }),
      response: { 200: Ok(SignupResent) },
      detail: {
        summary: 'Email a new verification code',
        security: [],
        description: '429 rate_limit_exceeded with Retry-After within 60 seconds of the previous code, and after 6 codes. Accepts Idempotency-Key.',
      },
    })
    .post(
      '/verify',
      ({ body, headers, set, request, server }) =>
        handleVerify(
          ctx,
          'agent',
          { body, headers, set, request, server },
          async () => null,
          (tx, signup) => completeAgentSignup(ctx, tx, signup, body.org_id),
        ),
      {
        body: t.Object({
          signup_token: SignupToken,
          verification_code: VerificationCode,
          org_id: t.Optional(t.String({ format: 'uuid', description: 'existing accounts: the workspace the agent joins' })),
        }),
        response: { 200: Ok(SignupTokens) },
        detail: {
          summary: 'Verify the code: OAuth tokens for the agent, once',
          security: [],
          description:
            'A new address gets an account, an organization on the agent plan and a managed inbox (`inbox`). An existing account joins the workspace named by org_id (403 forbidden when not a member), or its only one; ' +
            '409 conflict with details.reason org_selection_required and details.orgs when it has several, no_usable_workspace when it has none. Those refusals keep the signup open. ' +
            'A wrong code is 400 validation_error (code_incorrect, attempts_remaining); the fifth ends the signup; an expired code is code_expired. Accepts Idempotency-Key.',
        },
      },
    )
}
