/**
 * The DKIM key of the managed domain: generated once, on first use, and kept sealed in
 * managed_dkim_keys. Mail from managed inboxes is signed with it; operators publish its public
 * half (`bun run admin managed-dkim`).
 */
import type { ServerKeys } from '../../crypto'
import type { Sql } from '../../db/client'
import { dkimSelector, generateDkimKey } from '../../domains/service'
import { dkimValue } from '../../domains/dns-records'
import { insertManagedKey, managedKeyOf, managedPublicKeyOf } from './managed-key-queries'

export interface ManagedKey {
  domain: string
  selector: string
  privateKeyPem: string
  /** base64 SPKI, the p= of the TXT record */
  publicKey: string
}

/** The managed domain's key, created the first time it is asked for; concurrent first calls all get the same one. */
export async function managedDkimKey(sql: Sql, keys: ServerKeys, managedDomain: string): Promise<ManagedKey> {
  const domain = managedDomain.toLowerCase()
  let row = await managedKeyOf(sql, domain)
  if (!row) {
    const fresh = await generateDkimKey()
    // Several processes may get here at once: the primary key keeps the first insert, the
    // others insert nothing, and everyone reads the row that won.
    await insertManagedKey(sql, {
      domain,
      selector: dkimSelector(),
      private_sealed: keys.encrypt(fresh.privateKeyPem),
      public_key: fresh.publicKey,
    })
    row = await managedKeyOf(sql, domain)
    if (!row) throw new Error(`managed DKIM key for ${domain}: missing right after insert`)
  }
  return { domain, selector: row.selector, privateKeyPem: keys.decrypt(row.private_sealed), publicKey: row.public_key }
}

/** The public key of a managed domain selector, if that is the selector we sign with (no key is created). */
export async function managedDkimPublicKey(sql: Sql, domain: string, selector: string): Promise<string | null> {
  return managedPublicKeyOf(sql, domain.toLowerCase(), selector.toLowerCase())
}

/** The TXT record operators publish for the managed domain's key (creating the key if needed). */
export async function managedDkimRecord(sql: Sql, keys: ServerKeys, managedDomain: string) {
  const key = await managedDkimKey(sql, keys, managedDomain)
  return { selector: key.selector, name: `${key.selector}._domainkey.${key.domain}`, value: dkimValue(key.publicKey) }
}
