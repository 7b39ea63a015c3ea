/** The SQL of the authorization server: clients, pending authorization requests, codes, grants, tokens. */
import type postgres from 'postgres'
import { membershipsAs } from '../account/membership-queries'
import { orgsAs, type OrgRow } from '../account/org-queries'
import type { Role } from '../auth/principal'
import type { Sql, Tx } from '../db/client'

export interface ClientRow {
  id: string
  client_name: string | null
  redirect_uris: string[]
  created_at: Date
}

/** The columns of `ClientRow`, as every statement that answers one selects them. */
const clientColumns = (sql: Tx): postgres.Fragment => sql`id, client_name, redirect_uris, created_at`

export async function insertClient(sql: Tx, c: { id: string; name: string | null; redirectUris: string[] }): Promise<ClientRow> {
  const [row] = await sql<ClientRow[]>`
    insert into oauth_clients (id, client_name, redirect_uris) values (${c.id}, ${c.name}, ${c.redirectUris})
    returning ${clientColumns(sql)}`
  return row!
}

/**
 * Keeps what a client ID metadata document says under its URL: created, or refreshed if the
 * client came from a document too. Undefined when a registered client holds that id.
 */
export async function upsertMetadataDocumentClient(sql: Tx, c: { id: string; name: string | null; redirectUris: string[] }): Promise<ClientRow | undefined> {
  const [row] = await sql<ClientRow[]>`
    insert into oauth_clients (id, client_name, redirect_uris, metadata_document)
    values (${c.id}, ${c.name}, ${c.redirectUris}, true)
    on conflict (id) do update set client_name = excluded.client_name, redirect_uris = excluded.redirect_uris
      where oauth_clients.metadata_document
    returning ${clientColumns(sql)}`
  return row
}

export async function findClient(sql: Tx, id: string): Promise<ClientRow | null> {
  // ids we issue are short; a client ID metadata document URL may be up to 2000 characters
  if (id.length > 2000) return null
  const [row] = await sql<ClientRow[]>`select ${clientColumns(sql)} from oauth_clients where id = ${id}`
  return row ?? null
}

export interface AuthorizationRequestRow {
  id: string
  client_id: string
  redirect_uri: string
  code_challenge: string
  state: string | null
  scope: string
  resource: string | null
  csrf_hash: Buffer
  browser_hash: Buffer
  user_id: string | null
  live: boolean
  completed_at: Date | null
}

export async function insertAuthorizationRequest(
  sql: Tx,
  r: {
    id: string
    clientId: string
    redirectUri: string
    codeChallenge: string
    state: string | null
    scope: string
    resource: string | null
    csrfHash: Buffer
    browserHash: Buffer
    ttlSeconds: number
  },
) {
  await sql`
    insert into oauth_authorization_requests (id, client_id, redirect_uri, code_challenge, state, scope, resource, csrf_hash, browser_hash, expires_at)
    values (${r.id}, ${r.clientId}, ${r.redirectUri}, ${r.codeChallenge}, ${r.state}, ${r.scope}, ${r.resource}, ${r.csrfHash}, ${r.browserHash},
            now() + make_interval(secs => ${r.ttlSeconds}))`
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export async function findAuthorizationRequest(sql: Tx, id: string): Promise<AuthorizationRequestRow | null> {
  if (!UUID.test(id)) return null
  const [row] = await sql<AuthorizationRequestRow[]>`
    select id, client_id, redirect_uri, code_challenge, state, scope, resource, csrf_hash, browser_hash, user_id,
           expires_at > now() as live, completed_at
      from oauth_authorization_requests where id = ${id}`
  return row ?? null
}

export async function setAuthorizationRequestUser(sql: Tx, id: string, userId: string) {
  await sql`update oauth_authorization_requests set user_id = ${userId} where id = ${id} and completed_at is null`
}

/** Marks the request completed; false if it already was (a second submit of the same page). */
export async function completeAuthorizationRequest(sql: Tx, id: string): Promise<boolean> {
  const rows = await sql`update oauth_authorization_requests set completed_at = now() where id = ${id} and completed_at is null returning id`
  return rows.length === 1
}

export async function insertCode(
  sql: Tx,
  c: {
    hash: Buffer
    clientId: string
    userId: string
    orgId: string
    redirectUri: string
    codeChallenge: string
    scope: string
    resource: string | null
    ttlSeconds: number
  },
) {
  await sql`
    insert into oauth_codes (hash, client_id, user_id, org_id, redirect_uri, code_challenge, scope, resource, expires_at)
    values (${c.hash}, ${c.clientId}, ${c.userId}, ${c.orgId}, ${c.redirectUri}, ${c.codeChallenge}, ${c.scope}, ${c.resource},
            now() + make_interval(secs => ${c.ttlSeconds}))`
}

export interface CodeRow {
  client_id: string
  user_id: string
  org_id: string
  redirect_uri: string
  code_challenge: string
  scope: string
  resource: string | null
  live: boolean
}

/** Spends a code: the first attempt wins, whatever its outcome; null if it was spent before or never existed. */
export async function spendCode(sql: Tx, hash: Buffer): Promise<CodeRow | null> {
  const [row] = await sql<CodeRow[]>`
    update oauth_codes set used_at = now() where hash = ${hash} and used_at is null
    returning client_id, user_id, org_id, redirect_uri, code_challenge, scope, resource, expires_at > now() as live`
  return row ?? null
}

/** The grant a spent code produced (to revoke it when the code comes back). */
export async function grantOfSpentCode(sql: Tx, hash: Buffer): Promise<string | null> {
  const [row] = await sql<{ grant_id: string | null }[]>`select grant_id from oauth_codes where hash = ${hash} and used_at is not null`
  return row?.grant_id ?? null
}

export async function linkCodeToGrant(sql: Tx, hash: Buffer, grantId: string) {
  await sql`update oauth_codes set grant_id = ${grantId} where hash = ${hash}`
}

export async function insertGrant(sql: Tx, g: { id: string; clientId: string; userId: string; orgId: string; scope: string; resource: string | null }) {
  await sql`
    insert into oauth_grants (id, client_id, user_id, org_id, scope, resource)
    values (${g.id}, ${g.clientId}, ${g.userId}, ${g.orgId}, ${g.scope}, ${g.resource})`
}

export type RevokeReason = 'revoked' | 'refresh_token_reuse' | 'code_reuse' | 'membership_ended'

/** Revokes a grant and with it every token issued under it; the first reason recorded stays. */
export async function revokeGrant(sql: Tx, grantId: string, reason: RevokeReason) {
  await sql`update oauth_grants set revoked_at = now(), revoked_reason = ${reason} where id = ${grantId} and revoked_at is null`
}

export async function insertToken(sql: Tx, t: { hash: Buffer; grantId: string; kind: 'access' | 'refresh'; ttlSeconds: number }) {
  await sql`
    insert into oauth_tokens (hash, grant_id, kind, expires_at)
    values (${t.hash}, ${t.grantId}, ${t.kind}, now() + make_interval(secs => ${t.ttlSeconds}))`
}

export interface TokenRow {
  grant_id: string
  kind: 'access' | 'refresh'
  used: boolean
  live: boolean
  client_id: string
  user_id: string
  org_id: string
  scope: string
  resource: string | null
  grant_revoked: boolean
}

/** A token with its grant; `lock` holds the token row until the transaction ends (refresh rotation). */
export async function findToken(sql: Tx, hash: Buffer, opts: { lock?: boolean } = {}): Promise<TokenRow | null> {
  const [row] = await sql<TokenRow[]>`
    select t.grant_id, t.kind, t.used_at is not null as used, t.expires_at > now() as live,
           g.client_id, g.user_id, g.org_id, g.scope, g.resource, g.revoked_at is not null as grant_revoked
      from oauth_tokens t join oauth_grants g on g.id = t.grant_id
     where t.hash = ${hash}
     ${opts.lock ? sql`for update of t` : sql``}`
  return row ?? null
}

/** A live access token with its grant, the organization's plan and the authorizing person's current role. */
export interface AccessTokenRow extends Pick<OrgRow, 'plan' | 'api_per_minute_override'> {
  hash: Buffer
  grant_id: string
  org_id: string
  user_id: string
  role: Role
  resource: string | null
  scope: string
}

/**
 * The access token whose SHA-256 is `hash`, unexpired, of a grant not revoked, whose person is
 * still a member: one round trip, on every request that presents it.
 */
export async function liveAccessToken(sql: Sql, hash: Buffer): Promise<AccessTokenRow | undefined> {
  const [row] = await sql<AccessTokenRow[]>`
    select t.hash, g.id as grant_id, g.org_id, g.user_id, m.role, o.plan, o.api_per_minute_override, g.resource, g.scope
      from oauth_tokens t
      join oauth_grants g on g.id = t.grant_id
      join ${membershipsAs(sql, 'm')} on m.org_id = g.org_id and m.user_id = g.user_id
      join ${orgsAs(sql, 'o')} on o.id = g.org_id
     where t.hash = ${hash} and t.kind = 'access' and t.expires_at > now() and g.revoked_at is null`
  return row
}

export async function markTokenUsed(sql: Tx, hash: Buffer) {
  await sql`update oauth_tokens set used_at = now() where hash = ${hash}`
}

/**
 * Deletes what expired and nothing reads any more. Codes are kept a day past expiry, because a
 * spent code presented again revokes the grant it produced (replay detection); tokens go with
 * their expiry (a grant ends with its last token, and its row stays for the record).
 */
export async function pruneExpiredOAuthRows(sql: Tx) {
  const count = async (q: Promise<{ count: number }>) => (await q).count
  return {
    oauth_authorization_requests: await count(sql`delete from oauth_authorization_requests where expires_at < now()`),
    oauth_codes: await count(sql`delete from oauth_codes where expires_at < now() - interval '1 day'`),
    oauth_tokens: await count(sql`delete from oauth_tokens where expires_at < now()`),
  }
}
