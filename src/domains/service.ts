/**
 * Custom domains: an organization claims a name (pending), publishes the records we give it,
 * and verifies it by DNS. Several organizations may claim a name; only one can hold it
 * verified, and that one receives its mail and may send from it.
 */
import { randomUUIDv7 } from 'bun'
import { generateKeyPair, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import type { Config } from '../config'
import type { ServerKeys } from '../crypto'
import type { Sql, Tx } from '../db/client'
import type { Resolver } from '../dns/resolver'
import { recordChanges } from '../changes/record'
import { ApiError, errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { log } from '../log'
import { checkRecords, expectedRecords, foreignMx, lookupMx, normalizeDomain, PURPOSES, VERIFICATION_PREFIX, type Checks } from './dns-records'
import { isUniqueViolation } from '../db/errors'

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

/** What the domain service needs from the application context. */
export interface DomainDeps {
  config: Pick<Config, 'MANAGED_DOMAIN' | 'SMTP_HOSTNAME'>
  keys: ServerKeys
  resolver: Resolver
}

// every column but the sealed private key, which only dkimKeyFor reads
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

export function presentDomain(d: DomainRow, smtpHostname: string) {
  const checked = PURPOSES.every(p => d.checks[p])
  return {
    id: d.id,
    domain: d.name,
    status: d.status,
    created_at: iso(d.created_at)!,
    verified_at: iso(d.verified_at),
    last_checked_at: iso(d.last_checked_at),
    dns_records: expectedRecords(d, smtpHostname).map(r => ({ ...r, status: d.checks[r.purpose]?.status ?? ('unchecked' as const) })),
    checks: checked ? (d.checks as Checks) : null,
  }
}

const generateRsa = promisify(generateKeyPair)

/** A fresh RSA-2048 DKIM key: the PKCS#8 PEM to sign with, and the base64 SPKI that goes in DNS (`p=`). */
export async function generateDkimKey(): Promise<{ privateKeyPem: string; publicKey: string }> {
  // async: generating an RSA key takes tens of milliseconds, which must not stall other requests
  const { privateKey, publicKey } = await generateRsa('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })
  return { privateKeyPem: privateKey, publicKey: Buffer.from(publicKey).toString('base64') }
}

/** `am<yyyymm>`: a new selector per month lets a rotated key live beside the old one. */
export const dkimSelector = (now = new Date()) => `am${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`

const claimedTwice = (name: string) => errors.conflict(`domain: ${name} is already claimed by this organization`)
const verifiedElsewhere = (name: string) => errors.conflict(`domain: ${name} is verified by another organization`)

async function insertDomain(tx: Tx, keys: ServerKeys, orgId: string, name: string): Promise<DomainRow> {
  const dkim = await generateDkimKey()
  try {
    const [row] = await tx<DomainRow[]>`
      insert into domains (id, org_id, name, verification_token, dkim_selector, dkim_private_sealed, dkim_public)
      values (${randomUUIDv7()}, ${orgId}, ${name}, ${VERIFICATION_PREFIX + randomBytes(24).toString('base64url')},
              ${dkimSelector()}, ${keys.encrypt(dkim.privateKeyPem)}, ${dkim.publicKey})
      returning ${tx(COLUMNS)}`
    return row!
  } catch (error) {
    if (isUniqueViolation(error, 'domains_org_name_key')) throw claimedTwice(name)
    throw error
  }
}

async function findByName(sql: Tx, orgId: string, name: string): Promise<DomainRow | undefined> {
  const [row] = await sql<DomainRow[]>`select ${sql(COLUMNS)} from domains where org_id = ${orgId} and name = ${name}`
  return row
}

async function verifiedByAnotherOrg(sql: Tx, orgId: string, name: string): Promise<boolean> {
  const [row] = await sql`select 1 from domains where name = ${name} and status = 'verified' and org_id <> ${orgId}`
  return !!row
}

/**
 * Claims a domain for the organization (status pending). Unless `confirmed`, a domain whose MX
 * records point elsewhere is refused with mx_conflict: moving its MX to us would take mail away
 * from the mailbox provider it uses today.
 */
export async function claimDomain(sql: Sql, deps: DomainDeps, orgId: string, input: { domain: string; confirmed?: boolean }): Promise<DomainRow> {
  const name = normalizeDomain(input.domain, deps.config.MANAGED_DOMAIN)
  if (await findByName(sql, orgId, name)) throw claimedTwice(name)
  if (!input.confirmed) {
    const mx = await lookupMx(deps.resolver, name)
    // The check protects people from themselves; when DNS cannot answer it is skipped rather than
    // blocking the claim, which changes nothing in DNS by itself.
    if (!mx.ok && !mx.missing) log.warn('mx lookup failed; claim allowed', { domain: name, code: mx.code })
    const foreign = mx.ok ? foreignMx(mx.records, deps.config.SMTP_HOSTNAME) : []
    if (foreign.length) {
      throw new ApiError(
        'mx_conflict',
        `domain: ${name} already receives mail at ${foreign.map(r => r.exchange).join(', ')}; send confirmed: true to claim it anyway`,
        {
          mx: foreign,
          remediation: `Pointing the MX records of ${name} to ${deps.config.SMTP_HOSTNAME} would stop delivery to ${foreign[0]!.exchange}. Claim a subdomain (for example agents.${name}) instead, or repeat the request with confirmed: true if mail for ${name} should come here.`,
        },
      )
    }
  }
  return insertDomain(sql, deps.keys, orgId, name)
}

export async function listDomains(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<DomainRow>(sql, { columns: sql(COLUMNS), from: sql`domains`, where: sql`org_id = ${orgId}`, page })
}

/** One domain of the organization; another organization's is not_found. */
export async function getDomain(sql: Tx, orgId: string, id: string): Promise<DomainRow> {
  const [row] = await sql<DomainRow[]>`select ${sql(COLUMNS)} from domains where id = ${id} and org_id = ${orgId}`
  if (!row) throw errors.notFound('domain')
  return row
}

/** Removes the claim, its DKIM key and, if it was verified, the organization's hold on the name. */
export async function deleteDomain(sql: Sql, orgId: string, id: string): Promise<{ id: string }> {
  const [row] = await sql<{ id: string }[]>`delete from domains where id = ${id} and org_id = ${orgId} returning id`
  if (!row) throw errors.notFound('domain')
  return row
}

/**
 * Looks up every record of the domain and stores the results. The domain becomes verified when
 * the verification TXT record matches; a verified domain stays verified whatever later checks
 * find (the checks still show them). Refused while another organization holds the name.
 */
export async function verifyDomain(sql: Sql, deps: DomainDeps, row: DomainRow): Promise<DomainRow> {
  if (row.status !== 'verified' && (await verifiedByAnotherOrg(sql, row.org_id, row.name))) throw verifiedElsewhere(row.name)
  const checks = await checkRecords(deps.resolver, row, deps.config.SMTP_HOSTNAME)
  const passed = checks.verification.status === 'ok'
  try {
    return await sql.begin(async tx => {
      const [updated] = await tx<DomainRow[]>`
        update domains
           set checks = ${tx.json(checks as never)},
               last_checked_at = now(),
               status = case when ${passed} then 'verified' else status end,
               verified_at = case when ${passed} then coalesce(verified_at, now()) else verified_at end
         where id = ${row.id} and org_id = ${row.org_id}
         returning ${tx(COLUMNS)}`
      if (!updated) throw errors.notFound('domain')
      // the feed hears of a domain becoming verified, and of each failed verification of a pending one
      if (updated.status !== 'verified' || row.status !== 'verified') {
        await recordChanges(tx, [
          {
            orgId: row.org_id,
            type: passed ? 'domain.verified' : 'domain.verification_failed',
            resource: { type: 'domain', id: row.id },
            data: { name: row.name, status: updated.status, ...(!passed && { verification: checks.verification }) },
          },
        ])
      }
      return updated
    })
  } catch (error) {
    // another organization verified the same name while we were looking up DNS
    if (isUniqueViolation(error, 'domains_verified_name_key')) throw verifiedElsewhere(row.name)
    throw error
  }
}

/**
 * Operator override: marks `domain` verified for the organization without looking at DNS,
 * claiming it first (without the MX check) when the organization has not.
 */
export async function markDomainVerified(sql: Sql, keys: ServerKeys, managedDomain: string, orgId: string, domain: string): Promise<DomainRow> {
  const name = normalizeDomain(domain, managedDomain)
  return sql.begin(async tx => {
    const row = (await findByName(tx, orgId, name)) ?? (await insertDomain(tx, keys, orgId, name))
    if (row.status === 'verified') return row
    if (await verifiedByAnotherOrg(tx, orgId, name)) throw verifiedElsewhere(name)
    try {
      const [updated] = await tx<DomainRow[]>`
        update domains set status = 'verified', verified_at = now() where id = ${row.id} returning ${tx(COLUMNS)}`
      await recordChanges(tx, [
        { orgId, type: 'domain.verified', resource: { type: 'domain', id: row.id }, data: { name, status: 'verified', by: 'operator' } },
      ])
      return updated!
    } catch (error) {
      if (isUniqueViolation(error, 'domains_verified_name_key')) throw verifiedElsewhere(name)
      throw error
    }
  })
}

const canonical = (domain: string) => domain.trim().toLowerCase().replace(/\.$/, '')

/** The organization holding `domain` verified (the one that receives its mail), or null. */
export async function verifiedDomainOwner(sql: Sql, domain: string): Promise<{ orgId: string; domainId: string } | null> {
  const [row] = await sql<{ id: string; org_id: string }[]>`
    select id, org_id from domains where name = ${canonical(domain)} and status = 'verified'`
  return row ? { orgId: row.org_id, domainId: row.id } : null
}

/** The DKIM signing key of a domain the organization holds verified, or null (pending, or not its domain). */
export async function dkimKeyFor(sql: Sql, keys: ServerKeys, orgId: string, domain: string): Promise<{ selector: string; privateKeyPem: string } | null> {
  const [row] = await sql<{ dkim_selector: string; dkim_private_sealed: Buffer }[]>`
    select dkim_selector, dkim_private_sealed from domains
     where org_id = ${orgId} and name = ${canonical(domain)} and status = 'verified'`
  return row ? { selector: row.dkim_selector, privateKeyPem: keys.decrypt(row.dkim_private_sealed) } : null
}
