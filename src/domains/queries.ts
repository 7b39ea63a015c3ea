/**
 * The domains table (domains/ owns it): its row type and every statement on it, the API's
 * (./service.ts) and those other folders use: senders, recipients, the DKIM keys the local
 * resolver answers with, and a fragment for the statements that read a domain in their own
 * round trip.
 */
import { randomUUIDv7 } from 'bun'
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { Checks } from './dns-records'

export interface DomainRow {
  id: string
  org_id: string
  name: string
  status: 'pending' | 'verified'
  verification_token: string
  dkim_selector: string
  dkim_public: string
  created_at: Date
  verified_at: Date | null
  last_checked_at: Date | null
  /** `{}` until the first verification */
  checks: Partial<Checks>
}

// every column but the sealed private key, which only sealedDkimKey reads
const COLUMNS = [
  'id',
  'org_id',
  'name',
  'status',
  'verification_token',
  'dkim_selector',
  'dkim_public',
  'created_at',
  'verified_at',
  'last_checked_at',
  'checks',
]

/** Inserts a pending claim with its DKIM key (the private key sealed). */
export async function insertDomainRow(
  tx: Tx,
  orgId: string,
  d: { name: string; verificationToken: string; dkimSelector: string; dkimPrivateSealed: Buffer; dkimPublic: string },
): Promise<DomainRow> {
  const [row] = await tx<DomainRow[]>`
    insert into domains (id, org_id, name, verification_token, dkim_selector, dkim_private_sealed, dkim_public)
    values (${randomUUIDv7()}, ${orgId}, ${d.name}, ${d.verificationToken}, ${d.dkimSelector}, ${d.dkimPrivateSealed}, ${d.dkimPublic})
    returning ${tx(COLUMNS)}`
  return row!
}

export async function domainByName(sql: Tx, orgId: string, name: string): Promise<DomainRow | undefined> {
  const [row] = await sql<DomainRow[]>`select ${sql(COLUMNS)} from domains where org_id = ${orgId} and name = ${name}`
  return row
}

export async function domainById(sql: Tx, orgId: string, id: string): Promise<DomainRow | undefined> {
  const [row] = await sql<DomainRow[]>`select ${sql(COLUMNS)} from domains where id = ${id} and org_id = ${orgId}`
  return row
}

/** Whether another organization holds `name` verified. */
export async function verifiedByAnotherOrg(sql: Tx, orgId: string, name: string): Promise<boolean> {
  const [row] = await sql`select 1 from domains where name = ${name} and status = 'verified' and org_id <> ${orgId}`
  return !!row
}

export function domainsPage(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<DomainRow>(sql, { columns: sql(COLUMNS), from: sql`domains`, where: sql`org_id = ${orgId}`, page })
}

/** Deletes the organization's domain `id`; whether it had one. */
export async function deleteDomainRow(sql: Sql, orgId: string, id: string): Promise<boolean> {
  const [row] = await sql`delete from domains where id = ${id} and org_id = ${orgId} returning id`
  return !!row
}

/** Stores the results of a verification; `passed` makes the domain verified. The row, or undefined if gone. */
export async function recordVerification(tx: Tx, orgId: string, id: string, checks: Checks, passed: boolean): Promise<DomainRow | undefined> {
  const [updated] = await tx<DomainRow[]>`
    update domains
       set checks = ${tx.json(checks as never)},
           last_checked_at = now(),
           status = case when ${passed} then 'verified' else status end,
           verified_at = case when ${passed} then coalesce(verified_at, now()) else verified_at end
     where id = ${id} and org_id = ${orgId}
     returning ${tx(COLUMNS)}`
  return updated
}

/** Marks a domain verified now. */
export async function setVerified(tx: Tx, id: string): Promise<DomainRow> {
  const [updated] = await tx<DomainRow[]>`update domains set status = 'verified', verified_at = now() where id = ${id} returning ${tx(COLUMNS)}`
  return updated!
}

/** The domain `name` (canonical) held verified, with its organization. */
export async function verifiedDomainByName(sql: Tx, name: string): Promise<{ id: string; org_id: string } | undefined> {
  const [row] = await sql<{ id: string; org_id: string }[]>`select id, org_id from domains where name = ${name} and status = 'verified'`
  return row
}

/** The selector and sealed private DKIM key of a domain (canonical name) the organization holds verified. */
export async function sealedDkimKey(sql: Tx, orgId: string, name: string): Promise<{ dkim_selector: string; dkim_private_sealed: Buffer } | undefined> {
  const [row] = await sql<{ dkim_selector: string; dkim_private_sealed: Buffer }[]>`
    select dkim_selector, dkim_private_sealed from domains
     where org_id = ${orgId} and name = ${name} and status = 'verified'`
  return row
}

/** Whether `domain` is a verified domain of the organization `org` (an id, or a column of the enclosing statement), as a condition. */
export const isVerifiedDomainOf = (sql: Tx, org: string | postgres.Fragment, domain: string | undefined): postgres.Fragment =>
  sql`exists (select 1 from domains where org_id = ${org} and status = 'verified' and name = ${domain ?? null})`

/** `domains` under `alias`, for a statement of another folder that reads domains in its own round trip. */
export const domainsAs = (sql: Tx, alias: string): postgres.Fragment => sql`domains ${sql(alias)}`

/** The organization's verified domain names, in order. */
export async function verifiedDomainNames(sql: Tx, orgId: string): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`select name from domains where org_id = ${orgId} and status = 'verified' order by name`
  return rows.map(r => r.name)
}

/** Whether `hostname` is a verified domain of the organization or a name under one. */
export async function coveredByVerifiedDomain(sql: Tx, orgId: string, hostname: string): Promise<boolean> {
  const [row] = await sql`
    select 1 from domains where org_id = ${orgId} and status = 'verified'
       and (${hostname} = name or ${hostname} like '%.' || name)`
  return Boolean(row)
}

/** The DKIM public key a verified domain publishes under `selector`, or null. */
export async function dkimPublicKey(sql: Tx, domain: string, selector: string): Promise<string | null> {
  const [row] = await sql<{ dkim_public: string }[]>`
    select dkim_public from domains where name = ${domain} and dkim_selector = ${selector} and status = 'verified'`
  return row?.dkim_public ?? null
}
