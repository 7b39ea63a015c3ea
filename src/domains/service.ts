/**
 * Custom domains: an organization claims a name (pending), publishes the records we give it,
 * and verifies it by DNS. Several organizations may claim a name; only one can hold it
 * verified, and that one receives its mail and may send from it.
 */
import { generateKeyPair, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import type { Config } from '../config'
import type { ServerKeys } from '../crypto'
import type { Sql, Tx } from '../db/client'
import type { Resolver } from '../dns/resolver'
import { recordChanges } from '../changes/record'
import { ApiError, errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { log } from '../log'
import { checkRecords, expectedRecords, foreignMx, lookupMx, normalizeDomain, PURPOSES, VERIFICATION_PREFIX, type Checks } from './dns-records'
import { isUniqueViolation } from '../db/errors'
import {
  type DomainRow,
  deleteDomainRow,
  domainById,
  domainByName,
  domainsPage,
  insertDomainRow,
  recordVerification,
  sealedDkimKey,
  setVerified,
  verifiedByAnotherOrg,
  verifiedDomainByName,
} from './queries'

/** What the domain service needs from the application context. */
export interface DomainDeps {
  config: Pick<Config, 'MANAGED_DOMAIN' | 'SMTP_HOSTNAME'>
  keys: ServerKeys
  resolver: Resolver
}

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
    return await insertDomainRow(tx, orgId, {
      name,
      verificationToken: VERIFICATION_PREFIX + randomBytes(24).toString('base64url'),
      dkimSelector: dkimSelector(),
      dkimPrivateSealed: keys.encrypt(dkim.privateKeyPem),
      dkimPublic: dkim.publicKey,
    })
  } catch (error) {
    if (isUniqueViolation(error, 'domains_org_name_key')) throw claimedTwice(name)
    throw error
  }
}

/**
 * Claims a domain for the organization (status pending). Unless `confirmed`, a domain whose MX
 * records point elsewhere is refused with mx_conflict: moving its MX to us would take mail away
 * from the mailbox provider it uses today.
 */
export async function claimDomain(sql: Sql, deps: DomainDeps, orgId: string, input: { domain: string; confirmed?: boolean }): Promise<DomainRow> {
  const name = normalizeDomain(input.domain, deps.config.MANAGED_DOMAIN)
  if (await domainByName(sql, orgId, name)) throw claimedTwice(name)
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
  return domainsPage(sql, orgId, page)
}

/** One domain of the organization; another organization's is not_found. */
export async function getDomain(sql: Tx, orgId: string, id: string): Promise<DomainRow> {
  const row = await domainById(sql, orgId, id)
  if (!row) throw errors.notFound('domain')
  return row
}

/** Removes the claim, its DKIM key and, if it was verified, the organization's hold on the name. */
export async function deleteDomain(sql: Sql, orgId: string, id: string): Promise<{ id: string }> {
  if (!(await deleteDomainRow(sql, orgId, id))) throw errors.notFound('domain')
  return { id }
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
      const updated = await recordVerification(tx, row.org_id, row.id, checks, passed)
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
    const row = (await domainByName(tx, orgId, name)) ?? (await insertDomain(tx, keys, orgId, name))
    if (row.status === 'verified') return row
    if (await verifiedByAnotherOrg(tx, orgId, name)) throw verifiedElsewhere(name)
    try {
      const updated = await setVerified(tx, row.id)
      await recordChanges(tx, [
        { orgId, type: 'domain.verified', resource: { type: 'domain', id: row.id }, data: { name, status: 'verified', by: 'operator' } },
      ])
      return updated
    } catch (error) {
      if (isUniqueViolation(error, 'domains_verified_name_key')) throw verifiedElsewhere(name)
      throw error
    }
  })
}

const canonical = (domain: string) => domain.trim().toLowerCase().replace(/\.$/, '')

/** The organization holding `domain` verified (the one that receives its mail), or null. */
export async function verifiedDomainOwner(sql: Sql, domain: string): Promise<{ orgId: string; domainId: string } | null> {
  const row = await verifiedDomainByName(sql, canonical(domain))
  return row ? { orgId: row.org_id, domainId: row.id } : null
}

/** The DKIM signing key of a domain the organization holds verified, or null (pending, or not its domain). */
export async function dkimKeyFor(sql: Sql, keys: ServerKeys, orgId: string, domain: string): Promise<{ selector: string; privateKeyPem: string } | null> {
  const row = await sealedDkimKey(sql, orgId, canonical(domain))
  return row ? { selector: row.dkim_selector, privateKeyPem: keys.decrypt(row.dkim_private_sealed) } : null
}
