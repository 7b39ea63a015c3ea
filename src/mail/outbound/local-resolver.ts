/**
 * DNS as the local relay's deliveries see it: the DKIM selector records of the keys this
 * service signs with (the managed domain's, verified domains') answered from the database, so
 * locally delivered mail authenticates without anyone having published them; everything else
 * from the service's resolver.
 */
import { dkimPublicKey } from '../../domains/queries'
import type { AppContext } from '../../context'
import { dkimValue } from '../../domains/dns-records'
import type { Resolver } from '../../dns/resolver'
import { managedDkimPublicKey } from './managed-key'

const DKIM_NAME = /^([a-z0-9_-]+)\._domainkey\.([a-z0-9.-]+?)\.?$/

/** A TXT answer in the shape of dns.resolveTxt: strings of at most 255 characters. */
const txt = (value: string) => [value.match(/.{1,255}/g) ?? ['']]

async function ownDkimKey(ctx: AppContext, selector: string, domain: string): Promise<string | null> {
  if (domain === ctx.config.MANAGED_DOMAIN.toLowerCase()) return managedDkimPublicKey(ctx.sql, domain, selector)
  return dkimPublicKey(ctx.sql, domain, selector)
}

export function localResolver(ctx: AppContext): Resolver {
  return async (name, rrtype) => {
    const m = rrtype === 'TXT' ? DKIM_NAME.exec(name.toLowerCase()) : null
    if (m) {
      const key = await ownDkimKey(ctx, m[1]!, m[2]!)
      if (key) return txt(dkimValue(key))
    }
    return ctx.resolver(name, rrtype)
  }
}
