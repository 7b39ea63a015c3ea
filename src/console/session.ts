/**
 * A console sign-in: a random token in an HttpOnly cookie (SameSite=Lax, Secure unless the
 * service runs for development over http), stored as its SHA-256 with the person and the
 * organization they are looking at. Every form carries a CSRF token derived from the session
 * token with a server key, so a form posted from another site (or another session) is refused.
 */
import { currentRole } from '../account/roles'
import { planOf } from '../account/org-queries'
import { userEmail } from '../account/user-queries'
import { planDefinition } from '../account/plans'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { randomToken, sha256 } from '../crypto'
import type { Sql } from '../db/client'
import { deleteSession, insertSession, liveSessionByHash, type SessionRow, setSessionOrg } from './queries'

const COOKIE = 'console_session'
const TOKEN = /^cs_[A-Za-z0-9_-]{43}$/
const SESSION_HOURS = 12

export interface Session extends SessionRow {
  token: string
  email: string
}

/** The session cookie's value as the browser sent it, if it looks like one of ours. */
export function sessionToken(request: Request): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [name, value] = part.trim().split('=')
    if (name === COOKIE && value && TOKEN.test(value)) return value
  }
  return null
}

/** Only a production service, or one reached over https, can insist on Secure (browsers refuse it on plain http hosts). */
const secure = (ctx: AppContext) => ctx.config.NODE_ENV === 'production' || ctx.config.PUBLIC_URL.startsWith('https:')

export const sessionCookie = (ctx: AppContext, token: string) =>
  `${COOKIE}=${token}; Path=/console; HttpOnly; SameSite=Lax; Max-Age=${SESSION_HOURS * 3600}${secure(ctx) ? '; Secure' : ''}`

export const clearedCookie = (ctx: AppContext) => `${COOKIE}=; Path=/console; HttpOnly; SameSite=Lax; Max-Age=0${secure(ctx) ? '; Secure' : ''}`

/** Starts a session for a person in one of their organizations; returns the cookie's token. */
export async function startSession(sql: Sql, userId: string, orgId: string): Promise<string> {
  const token = randomToken('cs_')
  // expired sessions are deleted by the cleanup job (src/plugins.ts `expiredRows`)
  await insertSession(sql, sha256(token), userId, orgId, SESSION_HOURS)
  return token
}

/** The live session of this token, with the person's email address. */
export async function findSession(sql: Sql, token: string): Promise<Session | null> {
  const row = await liveSessionByHash(sql, sha256(token))
  if (!row) return null
  // a person is deleted with their sessions (on delete cascade): the address is there
  return { ...row, token, email: (await userEmail(sql, row.user_id)) ?? '' }
}

/** Looks at another organization of the person's (the caller checked the membership). */
export async function switchOrg(sql: Sql, sessionId: string, orgId: string): Promise<void> {
  await setSessionOrg(sql, sessionId, orgId)
}

export async function endSession(sql: Sql, sessionId: string): Promise<void> {
  await deleteSession(sql, sessionId)
}

/** The CSRF token of every form of this session. */
export const csrfOf = (ctx: AppContext, session: Session) => ctx.keys.sign('console-csrf', session.token)

export const csrfValid = (ctx: AppContext, session: Session, given: string | undefined) =>
  given !== undefined && ctx.keys.verify('console-csrf', session.token, given)

/**
 * Who the console acts as: the person, with their role in the organization read now (null when
 * they are no longer a member), and the organization's plan, like an OAuth token of theirs.
 */
export async function authOf(ctx: AppContext, session: Session): Promise<Auth | null> {
  const [role, plan] = await Promise.all([currentRole(ctx.sql, session.org_id, session.user_id), planOf(ctx.sql, session.org_id)])
  if (!role || !plan) return null
  return {
    orgId: session.org_id,
    keyId: session.id,
    userId: session.user_id,
    role,
    method: 'oauth',
    scopes: ['service:api'],
    plan,
    apiPerMinute: planDefinition(plan).limits.api_per_minute,
  }
}
