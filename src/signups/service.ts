/**
 * Email-verified signups, shared by the CLI signup and the agent signup: an opaque signup token
 * for the client, a 6-digit code for the mailbox. The code is kept as an HMAC under the server
 * key (a plain hash of a 6-digit number falls to a million guesses), compared in constant time,
 * valid 15 minutes, renewed by a resend at most once a minute. Five wrong codes end the signup,
 * whatever the resends; a cap on signups per address and day bounds guessing across tokens.
 */
import { randomUUIDv7 } from 'bun'
import { randomInt } from 'node:crypto'
import type { AppContext } from '../context'
import { randomToken, safeEqual, sha256 } from '../crypto'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { rateLimitError, rateLimiter } from '../http/rate-limit'
import { enqueueVerificationMail } from './verification-mail.job'
import { countFailedAttempt, countRecentSignups, insertSignup, markCompleted, replaceCode, signupByTokenHash, type SignupKind, type SignupRow } from './queries'

export const SIGNUP_TOKEN_PREFIX = 'sgt_'
export const SIGNUP_LIMITS = {
  /** the signup token */
  tokenTtlSeconds: 24 * 60 * 60,
  codeTtlSeconds: 15 * 60,
  resendAfterSeconds: 60,
  maxFailedAttempts: 5,
  /** the first mail plus resends */
  maxSends: 6,
  /** signups started for one address in 24 hours: bounds mail to it and guesses against it */
  perEmailPerDay: 10,
  /** start, resend and verify requests per address and minute */
  perEmailPerMinute: 10,
} as const

function newCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0')
}

function codeHmac(ctx: AppContext, signupId: string, code: string): Buffer {
  return Buffer.from(ctx.keys.sign('signup-code', `${signupId}:${code}`), 'base64url')
}

function codeMail(email: string, code: string, kind: SignupKind) {
  const what = kind === 'cli' ? 'your new account' : 'your agent'
  return {
    to: email,
    subject: `Your verification code: ${code}`,
    text:
      `Your verification code is ${code}\n\n` +
      `Enter it to finish setting up ${what}. It expires in ${SIGNUP_LIMITS.codeTtlSeconds / 60} minutes.\n\n` +
      `If you did not ask for this, ignore this message: nothing happens without the code.\n`,
  }
}

/** Spends one request of the per-address limiter: 429 rate_limit_exceeded past it. */
export async function limitPerEmail(ctx: AppContext, email: string) {
  const decision = await rateLimiter(ctx).take(`signup-email:${email.trim().toLowerCase()}`, SIGNUP_LIMITS.perEmailPerMinute)
  if (!decision.allowed) throw rateLimitError(decision, 'rate_limit_exceeded', 'email address')
}

function tooSoon(retryAfter: number, message: string): ApiError {
  return errors.retryLater('rate_limit_exceeded', message, retryAfter)
}

const unusable = () => errors.validation('signup_token', 'unknown, expired or no longer usable; start the signup again', { reason: 'signup_token_invalid' })

/** Creates a signup and queues its first code mail; returns the signup token (shown once) and the mail job. */
export async function startSignup(
  ctx: AppContext,
  tx: Tx,
  s: { kind: SignupKind; email: string; name?: string; orgName?: string; deviceName?: string },
): Promise<{ token: string; jobId: string | null }> {
  const email = s.email.trim()
  const recent = await countRecentSignups(tx, email)
  if (recent >= SIGNUP_LIMITS.perEmailPerDay) {
    throw tooSoon(3600, `email: at most ${SIGNUP_LIMITS.perEmailPerDay} signups per address in 24 hours`)
  }
  const id = randomUUIDv7()
  const token = randomToken(SIGNUP_TOKEN_PREFIX)
  const code = newCode()
  await insertSignup(tx, {
    id,
    kind: s.kind,
    tokenHash: sha256(token),
    email,
    name: s.name ?? null,
    orgName: s.orgName ?? null,
    deviceName: s.deviceName ?? null,
    codeHmac: codeHmac(ctx, id, code),
    codeTtlSeconds: SIGNUP_LIMITS.codeTtlSeconds,
    ttlSeconds: SIGNUP_LIMITS.tokenTtlSeconds,
  })
  const jobId = await enqueueVerificationMail(ctx, tx, codeMail(email, code, s.kind))
  return { token, jobId }
}

async function findSignup(sql: Tx, kind: SignupKind, token: string, lock: boolean): Promise<SignupRow | null> {
  if (token.length > 200) return null
  return (await signupByTokenHash(sql, kind, sha256(token), lock)) ?? null
}

const usable = (row: SignupRow | null): row is SignupRow => row?.live === true && !row.completed_at && row.failed_attempts < SIGNUP_LIMITS.maxFailedAttempts

/** A new code for the signup, mailed again; 429 within a minute of the last mail. */
export async function resendSignup(ctx: AppContext, tx: Tx, kind: SignupKind, token: string): Promise<{ email: string; jobId: string | null }> {
  const row = await findSignup(tx, kind, token, true)
  if (!usable(row)) throw unusable()
  if (row.since_sent < SIGNUP_LIMITS.resendAfterSeconds) {
    throw tooSoon(
      Math.max(1, Math.ceil(SIGNUP_LIMITS.resendAfterSeconds - row.since_sent)),
      `signup_token: a code was sent less than ${SIGNUP_LIMITS.resendAfterSeconds} seconds ago`,
    )
  }
  if (row.sends >= SIGNUP_LIMITS.maxSends) throw tooSoon(3600, `signup_token: at most ${SIGNUP_LIMITS.maxSends} codes per signup; start again later`)
  const code = newCode()
  await replaceCode(tx, row.id, codeHmac(ctx, row.id, code), SIGNUP_LIMITS.codeTtlSeconds)
  return { email: row.email, jobId: await enqueueVerificationMail(ctx, tx, codeMail(row.email, code, kind)) }
}

/**
 * Checks a code on its own, committed transaction, so a wrong guess counts even though the
 * request fails. Returns the signup when the code is right; a completed signup is returned as is
 * (the caller's idempotent step replays or refuses it).
 */
export async function checkSignupCode(ctx: AppContext, sql: Sql, kind: SignupKind, token: string, code: string): Promise<SignupRow> {
  const outcome = await sql.begin(async tx => {
    const row = await findSignup(tx, kind, token, true)
    if (row?.completed_at) return row
    if (!usable(row)) return unusable()
    const right = safeEqual(codeHmac(ctx, row.id, code), row.code_hmac)
    if (right && row.code_live) return row
    if (!right) {
      await countFailedAttempt(tx, row.id)
      const left = SIGNUP_LIMITS.maxFailedAttempts - row.failed_attempts - 1
      return left > 0
        ? errors.validation('verification_code', `is incorrect; ${left} attempt${left === 1 ? '' : 's'} left`, {
            reason: 'code_incorrect',
            attempts_remaining: left,
          })
        : errors.validation('verification_code', 'is incorrect; too many wrong codes, so this signup has ended; start again', {
            reason: 'signup_token_invalid',
            attempts_remaining: 0,
          })
    }
    return errors.validation('verification_code', 'has expired; ask for a new one with resend', { reason: 'code_expired' })
  })
  if (outcome instanceof ApiError) throw outcome
  return outcome
}

/** Marks the signup completed inside the caller's transaction; throws when another request completed it first. */
export async function completeSignup(tx: Tx, id: string) {
  if (!(await markCompleted(tx, id))) throw errors.conflict('signup_token: this signup was already completed', { reason: 'signup_completed' })
}
