/** `cli signup`: POST /v1/cli/signup/start, /resend and /verify (public). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { publicAccess } from '../http/auth'
import { Ok } from '../http/envelope'
import { handleResend, handleStart, handleVerify } from '../signups/handlers'
import { hashPassword, MAX_PASSWORD_LENGTH } from '../oauth/sign-in'
import { Email, SignupResent, SignupStarted, SignupToken, SignupTokens, TermsAccepted, VerificationCode } from './model'
import { completeCliSignup } from './signup.service'

export const MIN_PASSWORD_LENGTH = 12

const CODE_RULES =
  'A wrong code is 400 validation_error (details.reason code_incorrect, details.attempts_remaining); the fifth wrong code ends the signup (signup_token_invalid). ' +
  'A code older than 15 minutes is 400 validation_error (code_expired): ask for a new one with resend.'

export function cliSignupRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/cli/signup', tags: ['CLI signup'] })
    .use(publicAccess(ctx))
    .post(
      '/start',
      ({ body, headers, set, request, server }) =>
        handleStart(ctx, 'cli', { body, headers, set, request, server }, { name: body.name, orgName: body.org_name }),
      {
        body: t.Object({
          email: Email,
          name: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'your name' })),
          org_name: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'the new organization; default "<name>\'s organization"' })),
          terms_accepted: TermsAccepted,
        }),
        response: { 201: Ok(SignupStarted) },
        detail: {
          summary: 'Start a CLI signup: emails a 6-digit verification code',
          security: [],
          description:
            'Public. Returns an opaque signup_token for resend and verify. 429 rate_limit_exceeded past 10 requests a minute, or 10 signups a day, for one email address. Accepts Idempotency-Key (scoped to the caller).',
        },
      },
    )
    .post('/resend', ({ body, headers, set, request, server }) => handleResend(ctx, 'cli', { body, headers, set, request, server }), {
      body: t.Object({ signup_token: SignupToken }),
      response: { 200: Ok(SignupResent) },
      detail: {
        summary: 'Email a new verification code',
        security: [],
        description:
          '429 rate_limit_exceeded with Retry-After within 60 seconds of the previous code, and after 6 codes. The previous code stops working. Accepts Idempotency-Key.',
      },
    })
    .post(
      '/verify',
      ({ body, headers, set, request, server }) =>
        handleVerify(
          ctx,
          'cli',
          { body, headers, set, request, server },
          () => hashPassword(body.password),
          (tx, signup, hash) => completeCliSignup(ctx, tx, signup, hash),
        ),
      {
        body: t.Object({
          signup_token: SignupToken,
          verification_code: VerificationCode,
          password: t.String({
            minLength: MIN_PASSWORD_LENGTH,
            maxLength: MAX_PASSWORD_LENGTH,
            description: `at least ${MIN_PASSWORD_LENGTH} characters; for signing in later`,
          }),
        }),
        response: { 200: Ok(SignupTokens) },
        detail: {
          summary: 'Verify the code: creates the account, an organization on the free plan and a managed inbox',
          security: [],
          description: `Returns an org-scoped OAuth token set (client_id cli), once. ${CODE_RULES} 409 conflict (account_exists) when the address already has an account with a password. Accepts Idempotency-Key.`,
        },
      },
    )
}
