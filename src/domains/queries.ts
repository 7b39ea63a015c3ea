/**
 * The statements of `domains` that other folders use: senders, recipients, the DKIM keys the
 * local resolver answers with, and a fragment for the statements that read a domain in their
 * own round trip. No other folder names the table (domains/service.ts holds the API's).
 */
import type postgres from 'postgres'
import type { Tx } from '../db/client'

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
