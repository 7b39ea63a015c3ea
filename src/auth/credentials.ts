/**
 * Bearer credentials. An API key is looked up by its SHA-256 (the key has 256 random bits, so
 * the hash is as unguessable as the key), and the stored hash is compared in constant time.
 *
 * OAuth access tokens (`svc_oat_`) are resolved by src/oauth/access-tokens.ts, uncached.
 * Agent connection keys (`conn_`) are looked up like API keys, through the `findConnectionKey`
 * seam (their table belongs to the connections feature, src/connections/queries.ts), and carry
 * the one address they are bound to; what they may call is decided in
 * src/http/credential-scope.ts (CONNECTION_KEY_ROUTES).
 *
 * Resolved API keys and connection keys are cached for CACHE_TTL_MS. Revoking one evicts it
 * from the cache of the process that revoked it at once; other processes stop accepting it
 * within CACHE_TTL_MS.
 */
import { LRUCache } from 'lru-cache'
import { safeEqual } from '../crypto'
import type { Sql } from '../db/client'
import type { OrgRow } from '../account/org-queries'
import { activeApiKeyByHash } from './api-key-queries'
import type { Auth } from './principal'
import { planDefinition } from '../account/plans'
import { ACCESS_TOKEN_PREFIX } from '../oauth/constants'
import { resolveAccessToken } from '../oauth/access-tokens'
import { perProcess } from '../context'
import { mailEvents } from '../events'
import type { CredentialResolver } from '../http/auth'

export const CACHE_TTL_MS = 5_000
export const API_KEY_PREFIX = 'svc_'
export const CONNECTION_KEY_PREFIX = 'conn_'

/** A connection key not revoked, by the SHA-256 of the key, with its organization's plan and API limit. */
export interface ConnectionKeyRow extends Pick<OrgRow, 'plan' | 'api_per_minute_override'> {
  id: string
  org_id: string
  address: string
  key_hash: Buffer
}

export type ConnectionKeyFinder = (sql: Sql, hash: Buffer) => Promise<ConnectionKeyRow | undefined>

declare module '../context' {
  interface Plugins {
    /** looks a connection key (`conn_`) up by its SHA-256, for the credential resolver */
    readonly findConnectionKey: ConnectionKeyFinder
  }
}

export class CredentialCache {
  private readonly cache = new LRUCache<string, Auth>({ max: 10_000, ttl: CACHE_TTL_MS })

  constructor(
    private readonly sql: Sql,
    private readonly findConnectionKey: ConnectionKeyFinder,
  ) {}

  /** The credential a bearer token names, or null when it is unknown or revoked. */
  async resolve(token: string): Promise<Auth | null> {
    if (token.startsWith(CONNECTION_KEY_PREFIX) && token.length <= 200) return this.resolveConnectionKey(token)
    if (!token.startsWith(API_KEY_PREFIX) || token.length > 200) return null
    if (token.startsWith(ACCESS_TOKEN_PREFIX)) {
      // OAuth access tokens are resolved on every request (role, expiry, revocation); an API key
      // can begin with the same characters by chance (1 in 64^4), so fall through when unknown
      const oauth = await resolveAccessToken(this.sql, token)
      if (oauth) return oauth
    }
    return this.cached(token, async hash => {
      const row = await activeApiKeyByHash(this.sql, hash)
      if (!row || !safeEqual(row.hash, hash)) return null
      return {
        orgId: row.org_id,
        keyId: row.id,
        userId: row.created_by,
        role: row.role ?? 'member',
        method: 'api_key',
        ...(row.function_id && { functionId: row.function_id }),
        plan: row.plan,
        apiPerMinute: row.api_per_minute_override ?? planDefinition(row.plan).limits.api_per_minute,
      }
    })
  }

  private resolveConnectionKey(token: string): Promise<Auth | null> {
    return this.cached(token, async hash => {
      const row = await this.findConnectionKey(this.sql, hash)
      if (!row || !safeEqual(row.key_hash, hash)) return null
      return {
        orgId: row.org_id,
        keyId: row.id,
        // a runtime, not a person: never more than a member
        userId: null,
        role: 'member',
        method: 'connection',
        boundAddress: row.address,
        plan: row.plan,
        apiPerMinute: row.api_per_minute_override ?? planDefinition(row.plan).limits.api_per_minute,
      }
    })
  }

  /**
   * A token's credential from the cache, or loaded by `load` from the token's SHA-256 and kept.
   * The cache is keyed by the same SHA-256 (base64), so a lookup's time says nothing about the token.
   */
  private async cached(token: string, load: (hash: Buffer) => Promise<Auth | null>): Promise<Auth | null> {
    const cacheKey = Bun.SHA256.hash(token, 'base64')
    const hit = this.cache.get(cacheKey)
    if (hit) return hit
    const auth = await load(Buffer.from(cacheKey, 'base64'))
    if (auth) this.cache.set(cacheKey, auth)
    return auth
  }

  /** Forgets cached credentials of a key (after revocation) or of an organization (after a plan change). */
  evict(match: { keyId?: string; orgId?: string }) {
    for (const [k, auth] of this.cache.entries()) {
      if (auth.keyId === match.keyId || auth.orgId === match.orgId) this.cache.delete(k)
    }
  }
}

/** This process's cache of resolved credentials. */
export const credentialCache = perProcess(ctx => {
  const cache = new CredentialCache(ctx.sql, ctx.plugins.findConnectionKey)
  // a credential carries its organization's plan and API limit: a change of them applies at once
  mailEvents(ctx).onOrgChanged(orgId => cache.evict({ orgId }))
  return cache
})

/** Every kind of bearer credential, for the route guard (plugged in by src/plugins.ts). */
export const resolveCredential: CredentialResolver = (ctx, token) => credentialCache(ctx).resolve(token)
