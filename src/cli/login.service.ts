/**
 * `cli login`: the device authorization grant of RFC 8628, answered in the v1 envelope. The CLI
 * gets an opaque device code to poll with and a short user code that a person approves in the
 * browser (/cli/device). The one poll that finds the approval receives the token set of a new
 * grant for the first-party client `cli`; a later poll with the same device code gets
 * expired_token (the code is used up), unless it repeats the successful request's
 * Idempotency-Key, which replays the stored answer to that client address.
 */
import { randomInt } from 'node:crypto'
import type { AppContext } from '../context'
import { randomToken, sha256 } from '../crypto'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { FIRST_PARTY_CLIENTS, issueFirstPartyTokens } from '../oauth/first-party'
import { currentRole } from '../account/roles'
import { insertDeviceCode, lockApproved, lockForPoll, markConsumed, recordPoll } from './queries'

export const DEVICE_LOGIN = {
  ttlSeconds: 600,
  intervalSeconds: 5,
  /** RFC 8628 section 3.5: each slow_down adds 5 seconds to the interval */
  slowDownStepSeconds: 5,
  maxIntervalSeconds: 60,
  /** a poll this much early still counts as on time (network and scheduling jitter) */
  slackSeconds: 1,
} as const

export const DEVICE_CODE_PREFIX = 'dc_'
/** RFC 8628 section 6.1: consonants only, no vowels (no words), no look-alikes; 20^8 codes. */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
const USER_CODE_LENGTH = 8

function newUserCode(): string {
  return Array.from({ length: USER_CODE_LENGTH }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join('')
}

/** `BCDF-GHJK`, as people read it. */
export const displayUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`

/** The stored form of what a person typed (any case, dashes and spaces ignored), or null when it cannot be a code. */
export function normalizeUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, '')
  if (code.length !== USER_CODE_LENGTH || [...code].some(c => !USER_CODE_ALPHABET.includes(c))) return null
  return code
}

export interface DeviceAuthorization {
  device_code: string
  user_code: string
  verification_uri: string
  verification_uri_complete: string
  expires_in: number
  interval: number
}

/** A new pending device login. */
export async function startDeviceLogin(ctx: AppContext, tx: Tx, input: { client_name?: string; device_name?: string }): Promise<DeviceAuthorization> {
  const deviceCode = randomToken(DEVICE_CODE_PREFIX)
  for (;;) {
    const userCode = newUserCode()
    // a clash with a live code is a 1 in 10^10 event; draw again rather than fail
    const inserted = await insertDeviceCode(tx, {
      deviceCodeHash: sha256(deviceCode),
      userCode,
      clientName: input.client_name ?? null,
      deviceName: input.device_name ?? null,
      intervalSeconds: DEVICE_LOGIN.intervalSeconds,
      ttlSeconds: DEVICE_LOGIN.ttlSeconds,
    })
    if (!inserted) continue
    const uri = `${ctx.config.PUBLIC_URL}/cli/device`
    return {
      device_code: deviceCode,
      user_code: displayUserCode(userCode),
      verification_uri: uri,
      verification_uri_complete: `${uri}?user_code=${displayUserCode(userCode)}`,
      expires_in: DEVICE_LOGIN.ttlSeconds,
      interval: DEVICE_LOGIN.intervalSeconds,
    }
  }
}

export type PollState = { kind: 'invalid' | 'expired' | 'consumed' | 'pending' | 'denied' | 'approved' } | { kind: 'slow_down'; interval: number }

/**
 * Where a device login stands for a poll, recording the poll (its own committed transaction:
 * the poll's time must count even though most polls answer with an error).
 */
export async function pollDeviceLogin(sql: Sql, deviceCode: string): Promise<PollState> {
  if (deviceCode.length > 200) return { kind: 'invalid' }
  return sql.begin(async tx => {
    const row = await lockForPoll(tx, sha256(deviceCode))
    if (!row) return { kind: 'invalid' as const }
    if (row.status === 'consumed') return { kind: 'consumed' as const }
    if (!row.live) return { kind: 'expired' as const }
    const early = row.since_poll !== null && row.since_poll < row.interval_seconds - DEVICE_LOGIN.slackSeconds
    const interval = early ? Math.min(DEVICE_LOGIN.maxIntervalSeconds, row.interval_seconds + DEVICE_LOGIN.slowDownStepSeconds) : row.interval_seconds
    await recordPoll(tx, row.id, interval)
    if (early) return { kind: 'slow_down' as const, interval }
    return { kind: row.status }
  })
}

/** The v1 error a poll that did not get tokens answers with. */
export function pollError(state: PollState): ApiError {
  switch (state.kind) {
    case 'invalid':
      return new ApiError('invalid_device_code', 'device_code: unknown; start a new login')
    case 'expired':
      return new ApiError('expired_token', `device_code: expired (it is valid ${DEVICE_LOGIN.ttlSeconds / 60} minutes); start a new login`)
    case 'consumed':
      return new ApiError('expired_token', 'device_code: already exchanged for tokens; start a new login')
    case 'slow_down':
      return errors.retryLater('slow_down', `polling too fast; wait ${state.interval} seconds between polls`, state.interval, {
        details: { interval: state.interval },
      })
    case 'denied':
      return new ApiError('access_denied', 'the login was denied in the browser')
    case 'pending':
      return new ApiError('authorization_pending', 'waiting for the code to be approved in the browser; poll again after the interval')
    case 'approved':
      return new ApiError('internal_error', 'an approved login has tokens to collect')
  }
}

export interface LoginTokens {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: string
  org_id: string
  user_id: string
}

/** Exchanges an approved device login for its token set, once; throws the poll error otherwise. */
export async function redeemDeviceLogin(tx: Tx, deviceCode: string): Promise<LoginTokens> {
  const row = await lockApproved(tx, sha256(deviceCode))
  if (!row) throw pollError({ kind: 'consumed' })
  if (!(await currentRole(tx, row.org_id, row.user_id)))
    throw new ApiError('access_denied', 'the person who approved is no longer a member of the organization')
  const { grantId, ...tokens } = await issueFirstPartyTokens(tx, FIRST_PARTY_CLIENTS.cli, row.user_id, row.org_id)
  await markConsumed(tx, row.id, grantId)
  return { ...tokens, org_id: row.org_id, user_id: row.user_id }
}
