/**
 * The statement that finds who owns envelope recipients: a managed inbox (mail/'s
 * managed_inboxes) or a verified domain, each with its organization's plan and storage used.
 * The rules (which address is which, the storage limit) are in ./recipients.ts.
 */
import { managedInboxesAs } from '../inbox-queries'
import { domainsAs } from '../../domains/queries'
import { orgsAs } from '../../account/org-queries'
import type { Plan } from '../../account/plans'
import type { Sql } from '../../db/client'

/** An owner found: of a managed inbox (`key` its address) or of a verified domain (`key` its name). */
export interface OwnerRow {
  kind: 'inbox' | 'domain'
  key: string
  org_id: string
  plan: Plan | null
  used: number | null
}

/** The owners of the managed inboxes `inboxes` and of the verified domains `domains`, in one statement. */
export function ownersOf(sql: Sql, inboxes: string[], domains: string[]): Promise<OwnerRow[]> {
  return sql<OwnerRow[]>`
    select 'inbox' as kind, i.address as key, i.org_id, o.plan, o.storage_used_bytes as used
      from ${managedInboxesAs(sql, 'i')} left join ${orgsAs(sql, 'o')} on o.id = i.org_id
     where i.address = any(${inboxes}::text[])
    union all
    select 'domain', d.name, d.org_id, o.plan, o.storage_used_bytes
      from ${domainsAs(sql, 'd')} left join ${orgsAs(sql, 'o')} on o.id = d.org_id
     where d.name = any(${domains}::text[]) and d.status = 'verified'`
}
