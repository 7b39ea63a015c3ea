/** Response schemas shared by the CLI login, the CLI signup and the agent signup. */
import { t } from 'elysia'
import { SCOPE } from '../oauth/constants'

const tokenFields = {
  access_token: t.String({ pattern: '^svc_oat_', description: 'OAuth access token, valid for 1 hour; shown only in this response' }),
  token_type: t.Literal('Bearer'),
  expires_in: t.Integer({ description: 'seconds (3600)' }),
  refresh_token: t.String({ pattern: '^svc_ort_', description: 'single use, valid for 90 days; exchange it at /oauth/token with client_id cli (or agent)' }),
  scope: t.String({ description: SCOPE }),
  org_id: t.String({ format: 'uuid', description: 'the organization the tokens act in' }),
  user_id: t.String({ format: 'uuid' }),
}

/** The OAuth token set of a first-party grant, with the organization and person it is for. */
export const LoginTokens = t.Object(tokenFields)

const Inbox = t.Object({ id: t.String({ format: 'uuid' }), address: t.String(), created_at: t.String({ format: 'date-time' }) })

/** A signup's token set; `inbox` is the managed inbox created with a new organization (null when an existing one was chosen). */
export const SignupTokens = t.Object({ ...tokenFields, inbox: t.Union([Inbox, t.Null()]) })

export const SignupStarted = t.Object({
  signup_token: t.String({ description: 'opaque; shown only in this response; valid 24 hours' }),
  code_expires_in: t.Integer({ description: 'seconds the emailed code stays valid (900)' }),
  resend_after: t.Integer({ description: 'seconds before a resend is allowed (60)' }),
})

export const SignupResent = t.Object({
  sent: t.Literal(true),
  code_expires_in: t.Integer({ description: 'seconds the new code stays valid; the previous code no longer works' }),
  resend_after: t.Integer(),
})

export const VerificationCode = t.String({ pattern: '^[0-9]{6}$', description: 'the 6-digit code from the email' })
export const SignupToken = t.String({ minLength: 1, maxLength: 200 })
export const Email = t.String({ format: 'email', maxLength: 320, description: 'an email address' })
export const TermsAccepted = t.Literal(true, { error: 'must be true' })
