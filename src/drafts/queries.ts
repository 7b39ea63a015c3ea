/** The statements of drafts, approval policies and approval links. */
import type { Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { SendMailRequest } from '../sending/model'
import type { DraftRow, DraftState } from './model'

/** A draft of the organization (only one from `address`, when a connection key asks). */
export async function findDraft(sql: Tx, orgId: string, id: string, address?: string): Promise<DraftRow | null> {
  const [row] = await sql<DraftRow[]>`
    select * from drafts where id = ${id} and org_id = ${orgId} ${address === undefined ? sql`` : sql`and from_address = ${address}`}`
  return row ?? null
}

/** The same, locked to the end of the transaction. */
export async function lockDraft(tx: Tx, orgId: string, id: string, address?: string): Promise<DraftRow | null> {
  const [row] = await tx<DraftRow[]>`
    select * from drafts where id = ${id} and org_id = ${orgId} ${address === undefined ? tx`` : tx`and from_address = ${address}`} for update`
  return row ?? null
}

/** Inserts a draft, unless one of the organization has its send key already (then null). */
export async function insertDraft(
  tx: Tx,
  d: { id: string; orgId: string; status: DraftState; request: SendMailRequest; sendKey: string },
): Promise<DraftRow | null> {
  const [row] = await tx<DraftRow[]>`
    insert into drafts (id, org_id, status, request, from_address, send_key)
    values (${d.id}, ${d.orgId}, ${d.status}, ${tx.json(d.request as never)}, ${d.request.from.toLowerCase()}, ${d.sendKey})
    on conflict (org_id, send_key) do nothing
    returning *`
  return row ?? null
}

export async function draftBySendKey(sql: Tx, orgId: string, sendKey: string): Promise<DraftRow | null> {
  const [row] = await sql<DraftRow[]>`select * from drafts where org_id = ${orgId} and send_key = ${sendKey}`
  return row ?? null
}

export async function replaceRequest(tx: Tx, id: string, request: SendMailRequest): Promise<DraftRow> {
  const [row] = await tx<DraftRow[]>`
    update drafts set request = ${tx.json(request as never)}, from_address = ${request.from.toLowerCase()}, updated_at = now()
     where id = ${id} returning *`
  return row!
}

export async function setStatus(tx: Tx, id: string, status: DraftState): Promise<DraftRow> {
  const [row] = await tx<DraftRow[]>`update drafts set status = ${status}, updated_at = now() where id = ${id} returning *`
  return row!
}

/** Records the approval or rejection of a pending draft by `userId` through `via`. */
export async function decideDraft(
  tx: Tx,
  id: string,
  status: 'sending' | 'rejected',
  decider: { via: 'api' | 'link'; userId: string | null },
  reason: string | null,
): Promise<DraftRow> {
  const [row] = await tx<DraftRow[]>`
    update drafts set status = ${status}, decided_via = ${decider.via}, decided_by = ${decider.userId}, decided_at = now(),
           rejection_reason = ${reason}, updated_at = now()
     where id = ${id} returning *`
  return row!
}

/** The draft became its send; null if it is not being sent any more (deleted meanwhile). */
export async function markSent(sql: Tx, id: string, sendId: string): Promise<DraftRow | null> {
  const [row] = await sql<DraftRow[]>`
    update drafts set status = 'sent', send_id = ${sendId}, send_error = null, updated_at = now()
     where id = ${id} and status in ('sending', 'sent') returning *`
  return row ?? null
}

export async function markSendError(sql: Tx, id: string, error: { code: string; message: string }): Promise<void> {
  await sql`update drafts set send_error = ${sql.json(error)}, updated_at = now() where id = ${id} and status = 'sending'`
}

export async function deleteDraftRow(sql: Tx, id: string): Promise<void> {
  await sql`delete from drafts where id = ${id}`
}

export const listDraftRows = (sql: Tx, orgId: string, page: PageRequest, filter: { status?: DraftState; address?: string }) =>
  listPage<DraftRow>(sql, {
    columns: sql`*`,
    from: sql`drafts`,
    where: sql`org_id = ${orgId}
      ${filter.status ? sql`and status = ${filter.status}` : sql``}
      ${filter.address ? sql`and from_address = ${filter.address}` : sql``}`,
    page,
  })

export interface PolicyRow {
  org_id: string
  address: string
  notify_email: string | null
  set_by: string | null
  created_at: Date
  updated_at: Date
}

export async function policyFor(sql: Tx, orgId: string, address: string): Promise<PolicyRow | null> {
  const [row] = await sql<PolicyRow[]>`select * from approval_policies where org_id = ${orgId} and address = ${address.toLowerCase()}`
  return row ?? null
}

export async function upsertPolicy(sql: Tx, orgId: string, address: string, notifyEmail: string | null, setBy: string | null): Promise<PolicyRow> {
  const [row] = await sql<PolicyRow[]>`
    insert into approval_policies (org_id, address, notify_email, set_by) values (${orgId}, ${address}, ${notifyEmail}, ${setBy})
    on conflict (org_id, address) do update set notify_email = excluded.notify_email, set_by = excluded.set_by, updated_at = now()
    returning *`
  return row!
}

export async function deletePolicy(sql: Tx, orgId: string, address: string): Promise<void> {
  await sql`delete from approval_policies where org_id = ${orgId} and address = ${address}`
}

export const listPolicyRows = (sql: Tx, orgId: string, page: PageRequest) =>
  listPage<PolicyRow & { id: string }>(sql, {
    columns: sql`*, address as id`,
    from: sql`approval_policies`,
    where: sql`org_id = ${orgId}`,
    idColumn: 'address',
    page,
  })

export interface LinkRow {
  id: string
  org_id: string
  draft_id: string
  created_by: string | null
  expires_at: Date
  used_at: Date | null
  live: boolean
}

export async function insertLink(
  sql: Tx,
  l: { id: string; orgId: string; draftId: string; tokenHash: Buffer; createdBy: string | null; sentTo: string | null; seconds: number },
): Promise<Date> {
  const [row] = await sql<{ expires_at: Date }[]>`
    insert into draft_approval_links (id, org_id, draft_id, token_hash, created_by, sent_to, expires_at)
    values (${l.id}, ${l.orgId}, ${l.draftId}, ${l.tokenHash}, ${l.createdBy}, ${l.sentTo}, now() + make_interval(secs => ${l.seconds}))
    returning expires_at`
  return row!.expires_at
}

export async function findLink(sql: Tx, tokenHash: Buffer): Promise<LinkRow | null> {
  const [row] = await sql<LinkRow[]>`
    select id, org_id, draft_id, created_by, expires_at, used_at, used_at is null and expires_at > now() as live
      from draft_approval_links where token_hash = ${tokenHash}`
  return row ?? null
}

/** Marks the link used, if it is still usable: true when this call used it. */
export async function useLink(sql: Tx, id: string): Promise<boolean> {
  const rows = await sql`update draft_approval_links set used_at = now() where id = ${id} and used_at is null and expires_at > now() returning id`
  return rows.length === 1
}
