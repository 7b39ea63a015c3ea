/** The console_sessions table (console/ owns it): its row type and every statement on it. */
import { randomUUIDv7 } from 'bun'
import type { Sql } from '../db/client'

/** A live session as its lookup reads it. */
export interface SessionRow {
  id: string
  user_id: string
  org_id: string
}

/** Every expired session, whoever's (the cleanup job's `expiredRows`); answers how many went. */
export async function pruneExpiredSessions(sql: Sql): Promise<number> {
  return (await sql`delete from console_sessions where expires_at < now()`).count
}

/** A session of the token's hash, valid `hours`. */
export async function insertSession(sql: Sql, tokenHash: Buffer, userId: string, orgId: string, hours: number): Promise<void> {
  await sql`
    insert into console_sessions (id, token_hash, user_id, org_id, expires_at)
    values (${randomUUIDv7()}, ${tokenHash}, ${userId}, ${orgId}, now() + make_interval(hours => ${hours}))`
}

/** The session of the token's hash, if it has not expired. */
export async function liveSessionByHash(sql: Sql, tokenHash: Buffer): Promise<SessionRow | undefined> {
  const [row] = await sql<SessionRow[]>`
    select id, user_id, org_id from console_sessions where token_hash = ${tokenHash} and expires_at > now()`
  return row
}

export async function setSessionOrg(sql: Sql, sessionId: string, orgId: string): Promise<void> {
  await sql`update console_sessions set org_id = ${orgId} where id = ${sessionId}`
}

export async function deleteSession(sql: Sql, sessionId: string): Promise<void> {
  await sql`delete from console_sessions where id = ${sessionId}`
}
