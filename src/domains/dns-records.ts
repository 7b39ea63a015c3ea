/**
 * The DNS side of a custom domain: which names are acceptable, the records the owner publishes,
 * and the checks that compare them with what DNS answers. No database here.
 */
import { isIP } from 'node:net'
import { domainToASCII } from 'node:url'
import { errors } from '../errors'
import { isNoRecord, type Resolver } from '../dns/resolver'

export const PURPOSES = ['verification', 'mx', 'spf', 'dkim', 'dmarc'] as const
export type Purpose = (typeof PURPOSES)[number]
export type CheckStatus = 'ok' | 'missing' | 'mismatch' | 'error'

export interface Check {
  status: CheckStatus
  /** what DNS answered at the record's name (TXT strings joined, MX as `<priority> <host>`) */
  found: string[]
  message: string
}
export type Checks = Record<Purpose, Check>

export interface DnsRecord {
  type: 'MX' | 'TXT'
  name: string
  value: string
  priority: number | null
  purpose: Purpose
}

/** What the records are built from: the claimed name and the secrets generated with it. */
export interface DomainKeys {
  name: string
  verification_token: string
  dkim_selector: string
  dkim_public: string
}

export const VERIFICATION_LABEL = '_agent-mail'
export const VERIFICATION_PREFIX = 'agent-mail-verification='

// RFC 6761/6762 names that public DNS never answers for, so they could never be verified
const SPECIAL_USE = ['localhost', 'invalid', 'local']
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

const hostOf = (name: string) => name.toLowerCase().replace(/\.$/, '')

/** The claimed name in canonical form (lowercase ASCII, no trailing dot); throws validation_error naming `domain`. */
export function normalizeDomain(input: string, managedDomain: string): string {
  let name = input.trim().toLowerCase().replace(/\.$/, '')
  if (!name) throw errors.validation('domain', 'must not be empty')
  if (isIP(name) || isIP(name.replace(/^\[|\]$/g, ''))) throw errors.validation('domain', 'must be a domain name, not an IP address')
  // an internationalized name is stored as its punycode, which is what DNS and SMTP see
  if (/[^\x00-\x7f]/.test(name)) name = domainToASCII(name)
  if (!name || name.length > 253) throw errors.validation('domain', 'is not a valid domain name')
  const labels = name.split('.')
  if (labels.length < 2) throw errors.validation('domain', 'must be a fully qualified domain name such as example.com')
  if (!labels.every(l => LABEL.test(l))) throw errors.validation('domain', 'is not a valid domain name (letters, digits and hyphens in dot-separated labels)')
  const tld = labels.at(-1)!
  if (/^\d+$/.test(tld)) throw errors.validation('domain', 'must be a domain name, not an IP address')
  const managed = managedDomain.toLowerCase()
  if (name === managed || name.endsWith(`.${managed}`)) {
    throw errors.validation('domain', `is the managed domain of this service or under it; create an inbox (POST /v1/inboxes) for an address @${managed}`)
  }
  if (SPECIAL_USE.includes(tld)) throw errors.validation('domain', `is under .${tld}, a special-use name that public DNS cannot verify`)
  return name
}

export const spfValue = (smtpHostname: string) => `v=spf1 include:${smtpHostname} ~all`
export const dkimValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`
export const dmarcValue = (domain: string) => `v=DMARC1; p=none; rua=mailto:dmarc@${domain}`

/** The records the owner publishes, in the order a person should add them. */
export function expectedRecords(d: DomainKeys, smtpHostname: string): DnsRecord[] {
  return [
    { type: 'TXT', name: `${VERIFICATION_LABEL}.${d.name}`, value: d.verification_token, priority: null, purpose: 'verification' },
    { type: 'MX', name: d.name, value: smtpHostname, priority: 10, purpose: 'mx' },
    { type: 'TXT', name: d.name, value: spfValue(smtpHostname), priority: null, purpose: 'spf' },
    { type: 'TXT', name: `${d.dkim_selector}._domainkey.${d.name}`, value: dkimValue(d.dkim_public), priority: null, purpose: 'dkim' },
    { type: 'TXT', name: `_dmarc.${d.name}`, value: dmarcValue(d.name), priority: null, purpose: 'dmarc' },
  ]
}

export interface MxRecord {
  exchange: string
  priority: number
}

type Lookup<T> = { ok: true; records: T[] } | { ok: false; missing: boolean; code: string }

async function lookup<T>(resolve: () => Promise<T[]>): Promise<Lookup<T>> {
  try {
    return { ok: true, records: (await resolve()) ?? [] }
  } catch (error) {
    if (isNoRecord(error)) return { ok: false, missing: true, code: 'ENODATA' }
    return { ok: false, missing: false, code: String((error as { code?: string })?.code ?? 'unknown error') }
  }
}

const lookupTxt = (resolver: Resolver, name: string) =>
  lookup<string>(async () => ((await resolver(name, 'TXT')) as (string | string[])[]).map(chunks => (Array.isArray(chunks) ? chunks.join('') : String(chunks))))

/**
 * The MX records of `name`, ignoring a null MX (RFC 7505 `0 .`, "accepts no mail"). A DNS
 * failure is returned as such, not thrown.
 */
export async function lookupMx(resolver: Resolver, name: string): Promise<Lookup<MxRecord>> {
  const result = await lookup<MxRecord>(() => resolver(name, 'MX'))
  if (!result.ok) return result
  const records = result.records
    .map(r => ({ exchange: hostOf(String(r.exchange ?? '')), priority: Number(r.priority ?? 0) }))
    .filter(r => r.exchange !== '')
    .sort((a, b) => a.priority - b.priority || a.exchange.localeCompare(b.exchange))
  return { ok: true, records }
}

/** MX hosts of `name` that are not ours: mail for the domain is handled elsewhere today. */
export function foreignMx(records: MxRecord[], smtpHostname: string): MxRecord[] {
  return records.filter(r => r.exchange !== hostOf(smtpHostname))
}

function failed(l: { missing: boolean; code: string }, name: string, type: string, missing: string): Check {
  return l.missing
    ? { status: 'missing', found: [], message: `no ${type} record at ${name}; ${missing}` }
    : { status: 'error', found: [], message: `DNS lookup of ${type} ${name} failed (${l.code}); try again later` }
}

async function checkVerification(resolver: Resolver, d: DomainKeys): Promise<Check> {
  const name = `${VERIFICATION_LABEL}.${d.name}`
  const l = await lookupTxt(resolver, name)
  if (!l.ok) return failed(l, name, 'TXT', 'publish the verification record to prove control of the domain')
  if (l.records.some(r => r.trim() === d.verification_token)) return { status: 'ok', found: l.records, message: 'the verification record is published' }
  return { status: 'mismatch', found: l.records, message: `no TXT record at ${name} has the value ${d.verification_token}` }
}

async function checkMx(resolver: Resolver, d: DomainKeys, smtpHostname: string): Promise<Check> {
  const l = await lookupMx(resolver, d.name)
  if (!l.ok) return failed(l, d.name, 'MX', `add an MX record pointing to ${smtpHostname} to receive mail here`)
  const found = l.records.map(r => `${r.priority} ${r.exchange}`)
  if (!l.records.length) return { status: 'missing', found, message: `no MX record at ${d.name}; add one pointing to ${smtpHostname} to receive mail here` }
  const ours = l.records.find(r => r.exchange === hostOf(smtpHostname))
  if (!ours) return { status: 'mismatch', found, message: `the MX records of ${d.name} do not point to ${smtpHostname}; mail goes elsewhere` }
  const preferred = l.records.filter(r => r.priority < ours.priority && r !== ours)
  if (preferred.length) {
    return {
      status: 'mismatch',
      found,
      message: `${preferred.map(r => r.exchange).join(', ')} is preferred over ${smtpHostname}; remove it or give it a higher priority number`,
    }
  }
  return { status: 'ok', found, message: `mail for ${d.name} is delivered to ${smtpHostname}` }
}

async function checkSpf(resolver: Resolver, d: DomainKeys, smtpHostname: string): Promise<Check> {
  const l = await lookupTxt(resolver, d.name)
  if (!l.ok) return failed(l, d.name, 'TXT', `publish ${spfValue(smtpHostname)} so receivers accept mail sent through us`)
  const spf = l.records.filter(r => /^v=spf1(\s|$)/i.test(r.trim()))
  if (!spf.length) return { status: 'missing', found: [], message: `no SPF record at ${d.name}; publish ${spfValue(smtpHostname)}` }
  if (spf.length > 1)
    return { status: 'mismatch', found: spf, message: `${d.name} has ${spf.length} SPF records, which makes SPF fail (RFC 7208); merge them into one` }
  const include = new RegExp(`^\\+?include:${hostOf(smtpHostname).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.?$`, 'i')
  if (
    spf[0]!
      .trim()
      .split(/\s+/)
      .some(term => include.test(term))
  )
    return { status: 'ok', found: spf, message: `the SPF record includes ${smtpHostname}` }
  return {
    status: 'mismatch',
    found: spf,
    message: `the SPF record of ${d.name} does not include ${smtpHostname}; add include:${smtpHostname} before its all term`,
  }
}

function dkimPublicKey(record: string): string | null {
  for (const tag of record.split(';')) {
    const at = tag.indexOf('=')
    if (at > 0 && tag.slice(0, at).trim().toLowerCase() === 'p') return tag.slice(at + 1).replace(/\s+/g, '')
  }
  return null
}

async function checkDkim(resolver: Resolver, d: DomainKeys): Promise<Check> {
  const name = `${d.dkim_selector}._domainkey.${d.name}`
  const l = await lookupTxt(resolver, name)
  if (!l.ok) return failed(l, name, 'TXT', 'publish the DKIM key so receivers can verify mail we sign for you')
  if (l.records.some(r => dkimPublicKey(r) === d.dkim_public)) return { status: 'ok', found: l.records, message: 'the DKIM key is published' }
  return { status: 'mismatch', found: l.records, message: `the TXT record at ${name} does not carry this domain's DKIM public key` }
}

async function checkDmarc(resolver: Resolver, d: DomainKeys): Promise<Check> {
  const name = `_dmarc.${d.name}`
  const l = await lookupTxt(resolver, name)
  if (!l.ok) return failed(l, name, 'TXT', 'a DMARC policy is recommended (the suggested one only asks for reports)')
  const dmarc = l.records.filter(r => /^v=DMARC1\s*(;|$)/i.test(r.trim()))
  if (dmarc.length === 1) return { status: 'ok', found: dmarc, message: 'a DMARC policy is published' }
  if (!dmarc.length) return { status: 'mismatch', found: l.records, message: `the TXT records at ${name} are not a DMARC policy (v=DMARC1)` }
  return { status: 'mismatch', found: dmarc, message: `${name} has ${dmarc.length} DMARC records; receivers ignore them all (RFC 7489), keep one` }
}

/** Looks up every record of the domain; a DNS failure is a check with status error, never a throw. */
export async function checkRecords(resolver: Resolver, d: DomainKeys, smtpHostname: string): Promise<Checks> {
  const [verification, mx, spf, dkim, dmarc] = await Promise.all([
    checkVerification(resolver, d),
    checkMx(resolver, d, smtpHostname),
    checkSpf(resolver, d, smtpHostname),
    checkDkim(resolver, d),
    checkDmarc(resolver, d),
  ])
  return { verification, mx, spf, dkim, dmarc }
}
