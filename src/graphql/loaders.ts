/**
 * The batch loaders of one request (DataLoader): every lookup that a field under a list makes is
 * collected over one tick and read in one statement (two for a page of a child list), whatever
 * the number of parents. Loaders are made per request, so nothing is cached across callers; each
 * reads through the service function of its feature, scoped to the caller's organization (and,
 * for mail, to a connection key's address).
 */
import DataLoader from 'dataloader'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import type { PageRequest } from '../http/pagination'
import { emailsByIds, threadEmailPages, threadsByIds } from '../mail/email-queries'
import { deliveriesByIds, endpointDeliveryPages } from '../webhooks/delivery-queries'
import { endpointsByIds } from '../webhooks/endpoint-queries'
import { functionsByIds } from '../functions/queries'
import { invocationPages } from '../functions/invocation-queries'
import { challengesByIds } from '../x402/challenge-queries'

/** Rows by id: one `id = any(...)` statement per batch; a missing id (another organization's) is null. */
function byId<R extends { id: string }>(fetch: (ids: readonly string[]) => Promise<R[]>) {
  return new DataLoader<string, R | null>(async ids => {
    const found = new Map((await fetch(ids)).map(r => [r.id, r]))
    return ids.map(id => found.get(id) ?? null)
  })
}

export interface ChildPageKey {
  parent: string
  page: PageRequest
}

/**
 * A page of a child list per parent: the keys that ask for the same page (size and cursor, as
 * siblings in a list do) are read together, in the two statements of `listPagesOf`.
 */
function pagesOf<R>(fetch: (parents: string[], page: PageRequest) => Promise<Map<string, { rows: R[]; total: number }>>) {
  return new DataLoader<ChildPageKey, { rows: R[]; total: number }, string>(
    async keys => {
      const groups = new Map<string, ChildPageKey[]>()
      for (const k of keys) {
        const group = `${k.page.limit}:${k.page.after ?? ''}`
        groups.set(group, [...(groups.get(group) ?? []), k])
      }
      const results = new Map<ChildPageKey, { rows: R[]; total: number }>()
      await Promise.all(
        [...groups.values()].map(async group => {
          const pages = await fetch([...new Set(group.map(k => k.parent))], group[0]!.page)
          for (const k of group) results.set(k, pages.get(k.parent)!)
        }),
      )
      return keys.map(k => results.get(k)!)
    },
    { cacheKeyFn: k => `${k.parent}:${k.page.limit}:${k.page.after ?? ''}` },
  )
}

export function makeLoaders(ctx: AppContext, auth: Auth | null) {
  const sql = ctx.sql
  // anonymous callers never reach a data field (the route refuses them first); an empty id keeps the types simple
  const orgId = auth?.orgId ?? '00000000-0000-0000-0000-000000000000'
  return {
    email: byId(ids => emailsByIds(sql, orgId, ids, auth?.boundAddress)),
    thread: byId(ids => threadsByIds(sql, orgId, ids)),
    threadEmails: pagesOf((parents, page) => threadEmailPages(sql, orgId, parents, page)),
    endpoint: byId(ids => endpointsByIds(sql, orgId, ids)),
    endpointDeliveries: pagesOf((parents, page) => endpointDeliveryPages(sql, orgId, parents, page)),
    delivery: byId(ids => deliveriesByIds(sql, orgId, ids)),
    function: byId(ids => functionsByIds(sql, orgId, ids)),
    functionInvocations: pagesOf((parents, page) => invocationPages(sql, orgId, parents, page)),
    challenge: byId(ids => challengesByIds(sql, orgId, ids)),
  }
}

export type Loaders = ReturnType<typeof makeLoaders>
