/**
 * The request side of the signup operations, shared by /v1/cli/signup/* and /v1/agent/signup/*:
 * rate limits, Idempotency-Key (scoped to the client address, as for every public operation),
 * no-store, and the code mail sent right after the transaction that created it commits.
 */
import type { AppContext } from '../context'
import { clientScope } from '../http/auth'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import type { Tx } from '../db/client'
import { checkSignupCode, limitPerEmail, resendSignup, SIGNUP_LIMITS, startSignup } from './service'
import type { SignupKind, SignupRow } from './queries'
import { sendVerificationMailNow } from './verification-mail.job'

type Headers = Record<string, string | number | string[]>
interface Server {
  requestIP(req: Request): { address: string } | null
}

export interface SignupRequest<B> {
  body: B
  headers: Record<string, string | undefined>
  set: { status?: number | string; headers: Headers }
  request: Request
  server: Server | null
}

const scopeOf = (ctx: AppContext, r: SignupRequest<unknown>, operation: string) => clientScope(ctx, r.request, r.server, operation)

export async function handleStart<B extends { email: string }>(
  ctx: AppContext,
  kind: SignupKind,
  r: SignupRequest<B>,
  details: { name?: string; orgName?: string; deviceName?: string },
) {
  r.set.headers['cache-control'] = 'no-store'
  await limitPerEmail(ctx, r.body.email)
  const key = idempotencyKeyOf(r.headers)
  const outcome = await idempotent(ctx.sql, ctx.keys, { scope: scopeOf(ctx, r, `${kind}.signup.start`), key, payload: r.body }, async tx => {
    const started = await startSignup(ctx, tx, { kind, email: r.body.email, ...details })
    return {
      status: 201,
      data: { signup_token: started.token, code_expires_in: SIGNUP_LIMITS.codeTtlSeconds, resend_after: SIGNUP_LIMITS.resendAfterSeconds },
      local: started.jobId,
    }
  })
  await sendVerificationMailNow(ctx, outcome.local ?? null)
  return applyOutcome(r.set, key, outcome)
}

export async function handleResend(ctx: AppContext, kind: SignupKind, r: SignupRequest<{ signup_token: string }>) {
  const key = idempotencyKeyOf(r.headers)
  const outcome = await idempotent(ctx.sql, ctx.keys, { scope: scopeOf(ctx, r, `${kind}.signup.resend`), key, payload: r.body }, async tx => {
    // no per-address limiter here: it may need the database connection this transaction holds
    // (the embedded database has one), and a resend is held to once a minute per signup anyway
    const resent = await resendSignup(ctx, tx, kind, r.body.signup_token)
    return {
      status: 200,
      data: { sent: true as const, code_expires_in: SIGNUP_LIMITS.codeTtlSeconds, resend_after: SIGNUP_LIMITS.resendAfterSeconds },
      local: resent.jobId,
    }
  })
  await sendVerificationMailNow(ctx, outcome.local ?? null)
  return applyOutcome(r.set, key, outcome)
}

/**
 * Checks the code (a wrong one counts, on its own transaction), then runs `finish` once per
 * signup inside the idempotent transaction; `prepare` runs in between, outside any transaction
 * (password hashing).
 */
export async function handleVerify<B extends { signup_token: string; verification_code: string }, P, T>(
  ctx: AppContext,
  kind: SignupKind,
  r: SignupRequest<B>,
  prepare: () => Promise<P>,
  finish: (tx: Tx, signup: SignupRow, prepared: P) => Promise<T>,
) {
  r.set.headers['cache-control'] = 'no-store'
  const key = idempotencyKeyOf(r.headers)
  const signup = await checkSignupCode(ctx, ctx.sql, kind, r.body.signup_token, r.body.verification_code)
  await limitPerEmail(ctx, signup.email)
  const prepared = await prepare()
  const outcome = await idempotent(ctx.sql, ctx.keys, { scope: scopeOf(ctx, r, `${kind}.signup.verify`), key, payload: r.body }, async tx => ({
    status: 200,
    data: await finish(tx, signup, prepared),
  }))
  return applyOutcome(r.set, key, outcome)
}
