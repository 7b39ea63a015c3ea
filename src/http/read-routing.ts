/**
 * Which reads go to the read replica (DATABASE_REPLICA_URL; src/db/replica.ts).
 *
 * A read goes there when the replica has replayed everything its caller could expect to see:
 * every commit of the primary up to REPLICA_MAX_LAG_MS ago, and every write of the caller's own
 * credential. A request that may write (any method but GET and HEAD, a GraphQL mutation) marks its
 * credential as writing from the moment it is authenticated until its response is out; until the
 * replica has caught up with that moment, the credential's reads stay on the primary. A read the
 * replica fails (it went away, or a recovery conflict cancelled it) runs again on the primary.
 *
 * What this process knows of a credential's writes is its own: behind a balancer with several API
 * processes, route a credential to one process, or accept that a write made through one is seen
 * through another within REPLICA_MAX_LAG_MS (docs/scaling.md).
 */
import { LRUCache } from 'lru-cache'
import type { Auth } from '../auth/principal'
import { type AppContext, perProcess, readingThrough } from '../context'
import { isReplicaFailure } from '../db/replica'
import { requestFacts } from '../request-context'

interface Writes {
  /** requests of the credential that may write, still running */
  running: number
  /** when the last of them ended (ms since the epoch) */
  endedAt: number
}

// An entry outlives the lag a replica may have and still serve reads; older writes are covered anyway.
const writers = perProcess(ctx => new LRUCache<string, Writes>({ max: 100_000, ttl: Math.max(60_000, ctx.config.REPLICA_MAX_LAG_MS * 10) }))

const credential = (auth: Auth) => `${auth.method}:${auth.keyId}`

/** Notes that `request` may write for `auth` until its response is out. Nothing without a replica. */
export function noteWriting(ctx: AppContext, auth: Auth, request: Request): void {
  if (!ctx.replica) return
  const key = credential(auth)
  const writes = writers(ctx).get(key) ?? { running: 0, endedAt: 0 }
  writes.running++
  writers(ctx).set(key, writes)
  const facts = requestFacts(request)
  ;(facts.finished ??= []).push(() => {
    writes.running--
    writes.endedAt = Date.now()
    writers(ctx).set(key, writes)
  })
}

/** Runs `read` on the replica when it covers what `auth` may expect to see, else (or when the replica fails it) on the primary. */
export async function onReadReplica<T>(ctx: AppContext, auth: Auth | null, request: Request, read: (ctx: AppContext) => Promise<T>): Promise<T> {
  const replica = ctx.replica
  if (!replica) return read(ctx)
  const writes = auth ? writers(ctx).get(credential(auth)) : undefined
  if (writes?.running || !replica.covers(writes?.endedAt ?? 0)) return read(ctx)
  try {
    const answer = await read(readingThrough(ctx, replica))
    requestFacts(request).onReplica = true
    return answer
  } catch (error) {
    if (!isReplicaFailure(error)) throw error
    replica.markDown()
    return read(ctx)
  }
}
