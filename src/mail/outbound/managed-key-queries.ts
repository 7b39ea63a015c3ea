/** The managed_dkim_keys table (mail/ owns it): the managed domain's DKIM key, sealed (./managed-key.ts). */
import type { Sql } from '../../db/client'

export interface ManagedKeyRow {
  domain: string
  selector: string
  private_sealed: Buffer
  public_key: string
}

/** The key of `domain` (lowercased by the caller), if one was made. */
export async function managedKeyOf(sql: Sql, domain: string): Promise<ManagedKeyRow | undefined> {
  const [row] = await sql<ManagedKeyRow[]>`select domain, selector, private_sealed, public_key from managed_dkim_keys where domain = ${domain}`
  return row
}

/** Inserts the key of `domain` unless it has one: the first insert wins, later ones insert nothing. */
export async function insertManagedKey(sql: Sql, key: ManagedKeyRow): Promise<void> {
  await sql`
    insert into managed_dkim_keys (domain, selector, private_sealed, public_key)
    values (${key.domain}, ${key.selector}, ${key.private_sealed}, ${key.public_key})
    on conflict (domain) do nothing`
}

/** The public key of `domain`'s key when its selector is `selector` (both lowercased by the caller). */
export async function managedPublicKeyOf(sql: Sql, domain: string, selector: string): Promise<string | null> {
  const [row] = await sql<{ public_key: string }[]>`
    select public_key from managed_dkim_keys where domain = ${domain} and selector = ${selector}`
  return row?.public_key ?? null
}
