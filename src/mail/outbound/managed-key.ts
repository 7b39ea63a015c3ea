/**
 * The DKIM key of the managed domain: generated once, on first use, and kept sealed in
 * managed_dkim_keys. Mail from managed inboxes is signed with it; operators publish its public
 * half (`bun run admin managed-dkim`).
 */
import type { ServerKeys } from '../../crypto'
import type { Sql } from '../../db/client'
import { dkimSelector, generateDkimKey } from '../../domains/service'
import { dkimValue } from '../../domains/dns-records'

export interface ManagedKey {
  domain: string
  selector: string
  privateKeyPem: string
  /** base64 SPKI, the p= of the TXT record */
  publicKey: string
}

interface Row {
  domain: string
  selector: string
  private_sealed: Buffer
  public_key: string
}

async function findKey(sql: Sql, domain: string): Promise<Row | undefined> {
  const [row] = await sql<Row[]>`select domain, selector, private_sealed, public_key from managed_dkim_keys where domain = ${domain}`
  return row
}

/** The managed domain's key, created the first time it is asked for; concurrent first calls all get the same one. */
export async function managedDkimKey(sql: Sql, keys: ServerKeys, managedDomain: string): Promise<ManagedKey> {
  const domain = managedDomain.toLowerCase()
  let row = await findKey(sql, domain)
  if (!row) {
    const fresh = await generateDkimKey()
    // Several processes may get here at once: the primary key keeps the first insert, the
    // others insert nothing, and everyone reads the row that won.
    await sql`
      insert into managed_dkim_keys (domain, selector, private_sealed, public_key)
      values (${domain}, ${dkimSelector()}, ${keys.encrypt(fresh.privateKeyPem)}, ${fresh.publicKey})
      on conflict (domain) do nothing`
    row = await findKey(sql, domain)
    if (!row) throw new Error(`managed DKIM key for ${domain}: missing right after insert`)
  }
  return { domain, selector: row.selector, privateKeyPem: keys.decrypt(row.private_sealed), publicKey: row.public_key }
}

/** The public key of a managed domain selector, if that is the selector we sign with (no key is created). */
export async function managedDkimPublicKey(sql: Sql, domain: string, selector: string): Promise<string | null> {
  const [row] = await sql<{ public_key: string }[]>`
    select public_key from managed_dkim_keys where domain = ${domain.toLowerCase()} and selector = ${selector.toLowerCase()}`
  return row?.public_key ?? null
}

/** The TXT record operators publish for the managed domain's key (creating the key if needed). */
export async function managedDkimRecord(sql: Sql, keys: ServerKeys, managedDomain: string) {
  const key = await managedDkimKey(sql, keys, managedDomain)
  return { selector: key.selector, name: `${key.selector}._domainkey.${key.domain}`, value: dkimValue(key.publicKey) }
}
