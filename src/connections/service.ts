/**
 * Agent connections: an owner or admin invites an agent runtime to act for one address of the
 * organization; the runtime claims the invitation once and gets a `conn_` key bound to that
 * address (what the key may call: src/http/credential-scope.ts). Claiming a new invitation for an
 * address that is already connected keeps the address and revokes the previous key in the same
 * transaction. Invitation codes and keys are stored as SHA-256 hashes only.
 */
import { userEmail } from '../account/user-queries'
import type { AppContext } from '../context'
import type { Auth } from '../auth/principal'
import { currentRole } from '../account/roles'
import { CONNECTION_KEY_PREFIX, credentialCache } from '../auth/credentials'
import { randomToken, sha256 } from '../crypto'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { iso } from '../http/timestamps'
import { splitAddress } from '../mail/inbound/recipients'
import { disconnectAddress, insertInvitation, isInboxOrVerifiedDomainOf, lockInvitation, markClaimed, revokeClaimedConnections } from './queries'

export const INVITATION_PREFIX = 'inv_'
export const INVITATION_TTL_SECONDS = 24 * 60 * 60

/** Agent connection management needs a person who is owner or admin now (rule 1); keys without a person never qualify. */
export async function requireConnectionManager(sql: Sql, auth: Auth, action: string) {
  if (auth.method === 'connection') throw errors.forbidden(`${action}: connection keys cannot manage connections`)
  if (!auth.userId) throw errors.forbidden(`${action}: needs the owner or admin role; this key was created without a person`)
  const role = await currentRole(sql, auth.orgId, auth.userId)
  if (role !== 'owner' && role !== 'admin') throw errors.forbidden(`${action}: needs the owner or admin role`)
}

export function normalizeAddress(input: string): string {
  return input.trim().toLowerCase()
}

/** Whether the address is a managed inbox of the organization or an address at one of its verified domains. */
export async function ownsAddress(sql: Tx, orgId: string, address: string): Promise<boolean> {
  const { local, domain } = splitAddress(address)
  if (!local || !domain) return false
  return isInboxOrVerifiedDomainOf(sql, orgId, address, domain)
}

export interface Invitation {
  id: string
  address: string
  label: string | null
  invitation_code: string
  expires_at: string
  setup_url: string
}

/** A private invitation for one address; the code is shown only in this answer. */
export async function createInvitation(ctx: AppContext, auth: Auth, input: { address: string; label?: string }): Promise<Invitation> {
  await requireConnectionManager(ctx.sql, auth, 'agent-connections')
  const address = normalizeAddress(input.address)
  if (!(await ownsAddress(ctx.sql, auth.orgId, address))) {
    throw errors.validation('address', 'must be a managed inbox of this organization or an address at one of its verified domains')
  }
  const ownerEmail = await userEmail(ctx.sql, auth.userId)
  const code = randomToken(INVITATION_PREFIX)
  const row = await insertInvitation(ctx.sql, {
    orgId: auth.orgId,
    address,
    label: input.label ?? null,
    createdBy: auth.userId,
    ownerAddress: ownerEmail!,
    invitationHash: sha256(code),
    ttlSeconds: INVITATION_TTL_SECONDS,
  })
  return {
    id: row.id,
    address,
    label: input.label ?? null,
    invitation_code: code,
    expires_at: iso(row.expires_at)!,
    setup_url: `${ctx.config.PUBLIC_URL}/v1/agent-connections/setup`,
  }
}

export interface Claimed {
  connection_id: string
  connection_key: string
  address: string
  setup_owner_address: string
}

/**
 * Claims an invitation: unknown, expired or withdrawn is 404, already claimed is 409. Returns
 * the new key and the ids of the connections it replaced (their keys are revoked).
 */
export async function claimInvitation(tx: Tx, code: string): Promise<{ claimed: Claimed; replaced: string[] }> {
  const row = await lockInvitation(tx, sha256(code))
  if (row?.claimed) throw errors.conflict('invitation: already claimed; ask the owner for a new invitation', { reason: 'invitation_claimed' })
  if (!row?.usable) throw errors.notFound('invitation')
  if (!(await ownsAddress(tx, row.org_id, row.address))) {
    throw errors.conflict(`invitation: ${row.address} no longer belongs to the organization`, { reason: 'address_gone' })
  }
  const replaced = await revokeClaimedConnections(tx, row.address)
  const key = randomToken(CONNECTION_KEY_PREFIX)
  await markClaimed(tx, row.id, sha256(key))
  return {
    claimed: { connection_id: row.id, connection_key: key, address: row.address, setup_owner_address: row.setup_owner_address },
    replaced,
  }
}

/**
 * Disconnects an address: revokes its key (and, for an owner or admin, withdraws its open
 * invitations). A connection key may disconnect only its own address (checked again here);
 * owners and admins any of the organization's. 404 when nothing was connected or pending.
 */
export async function disconnect(ctx: AppContext, auth: Auth, rawAddress: string): Promise<{ address: string; disconnected_at: string; revoked: string[] }> {
  const address = normalizeAddress(rawAddress)
  if (auth.method === 'connection') {
    if (address !== auth.boundAddress) throw errors.forbidden(`connection key: acts only for ${auth.boundAddress}`)
  } else {
    await requireConnectionManager(ctx.sql, auth, 'agent-connections')
  }
  // a runtime ends its own key only; an owner or admin also withdraws the address's open invitations
  const rows = await disconnectAddress(ctx.sql, auth.orgId, address, auth.method === 'connection' ? { keyId: auth.keyId } : 'all')
  if (!rows.length) throw errors.notFound('agent connection')
  for (const r of rows) credentialCache(ctx).evict({ keyId: r.id })
  return { address, disconnected_at: iso(rows[0]!.at)!, revoked: rows.map(r => r.id) }
}
