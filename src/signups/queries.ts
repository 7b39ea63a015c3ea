/** The signups table: its row type and every statement of it (the signup flows in service.ts, the cleanup job). */
import type { Sql, Tx } from '../db/client'

/** The cleanup job's part: signups live 24 hours, as long as they count towards the per-address daily cap. */
export async function pruneExpiredSignups(sql: Sql): Promise<number> {
  return (await sql`delete from signups where expires_at < now()`).count
}

export type SignupKind = 'cli' | 'agent'

export interface SignupRow {
  id: string
  kind: SignupKind
  email: string
  name: string | null
  org_name: string | null
  device_name: string | null
  code_hmac: Buffer
  code_live: boolean
  failed_attempts: number
  sends: number
  /** seconds since the last mail */
  since_sent: number
  live: boolean
  completed_at: Date | null
}

/** The signups started for an address (any case) in the last 24 hours. */
export async function countRecentSignups(sql: Tx, email: string): Promise<number> {
  const [row] = await sql<{ recent: number }[]>`
    select count(*)::int as recent from signups
     where lower(email) = lower(${email}) and created_at > now() - interval '24 hours'`
  return row!.recent
}

/** A new signup, its first code valid `codeTtlSeconds`, itself `ttlSeconds`. */
export async function insertSignup(
  sql: Tx,
  s: {
    id: string
    kind: SignupKind
    tokenHash: Buffer
    email: string
    name: string | null
    orgName: string | null
    deviceName: string | null
    codeHmac: Buffer
    codeTtlSeconds: number
    ttlSeconds: number
  },
): Promise<void> {
  await sql`
    insert into signups (id, kind, token_hash, email, name, org_name, device_name, code_hmac, code_expires_at, expires_at)
    values (${s.id}, ${s.kind}, ${s.tokenHash}, ${s.email}, ${s.name}, ${s.orgName}, ${s.deviceName},
            ${s.codeHmac}, now() + make_interval(secs => ${s.codeTtlSeconds}),
            now() + make_interval(secs => ${s.ttlSeconds}))`
}

/** The signup of a token's hash and kind, locked for update when `lock`. */
export async function signupByTokenHash(sql: Tx, kind: SignupKind, tokenHash: Buffer, lock: boolean): Promise<SignupRow | undefined> {
  const [row] = await sql<SignupRow[]>`
    select id, kind, email, name, org_name, device_name, code_hmac, code_expires_at > now() as code_live, failed_attempts, sends,
           extract(epoch from now() - last_sent_at)::float8 as since_sent, expires_at > now() as live, completed_at
      from signups where token_hash = ${tokenHash} and kind = ${kind}
    ${lock ? sql`for update` : sql``}`
  return row
}

/** A new code for the signup, valid `codeTtlSeconds`, counted as one more mail. */
export async function replaceCode(sql: Tx, id: string, codeHmac: Buffer, codeTtlSeconds: number): Promise<void> {
  await sql`
    update signups set code_hmac = ${codeHmac}, code_expires_at = now() + make_interval(secs => ${codeTtlSeconds}),
           sends = sends + 1, last_sent_at = now()
     where id = ${id}`
}

/** One more wrong code. */
export async function countFailedAttempt(sql: Tx, id: string): Promise<void> {
  await sql`update signups set failed_attempts = failed_attempts + 1 where id = ${id}`
}

/** Marks the signup completed; false when it already was. */
export async function markCompleted(sql: Tx, id: string): Promise<boolean> {
  return (await sql`update signups set completed_at = now() where id = ${id} and completed_at is null returning id`).length > 0
}
