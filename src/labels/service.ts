/**
 * The rules of labels: an organization's custom labels (the `labels` table: names, the limit,
 * system names reserved), and adding and taking labels off messages (one, a thread's, a batch),
 * read and unread exclusive. Every change of a message's labels is an `email.labels_changed`
 * change in the feed, recorded in the transaction that makes it.
 */
import type { Auth } from '../auth/principal'
import { type ChangeInput, recordChanges } from '../changes/record'
import type { AppContext } from '../context'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { mailEvents } from '../events'
import { iso } from '../http/timestamps'
import { ofAddress } from '../mail/email-queries'
import { dropLabelFromMail, type LabelChange, type RelabeledRow, type RelabelTarget, relabelEmails, SYSTEM_LABELS } from '../mail/label-queries'
import { LABELS_MAX } from './model'
import { countLabels, deleteLabelByName, insertLabel, type LabelRow, labelByName, labelsOf, lockKnownLabels, lockOrgLabels } from './queries'

const isSystem = (name: string) => (SYSTEM_LABELS as readonly string[]).includes(name)

const presentSystem = (name: string) => ({ name, system: true, created_at: null })
const presentCustom = (r: LabelRow) => ({ name: r.name, system: false, created_at: iso(r.created_at) })

/** The system labels, then the organization's own by name. */
export async function listLabels(sql: Sql, orgId: string) {
  const rows = await labelsOf(sql, orgId)
  return [...SYSTEM_LABELS.map(presentSystem), ...rows.map(presentCustom)]
}

/** Creates a custom label; one that exists is answered as it is (`created` false). */
export async function createLabel(ctx: AppContext, orgId: string, name: string) {
  if (isSystem(name)) throw errors.validation('name', `${name} is a system label`)
  const { row, created } = await ctx.sql.begin(async tx => {
    await lockOrgLabels(tx, orgId)
    const existing = await labelByName(tx, orgId, name)
    if (existing) return { row: existing, created: false }
    if ((await countLabels(tx, orgId)) >= LABELS_MAX)
      throw new ApiError('quota_exceeded', `labels: an organization keeps at most ${LABELS_MAX} custom labels`, { limit: LABELS_MAX })
    const made = await insertLabel(tx, orgId, name)
    await recordChanges(tx, [{ orgId, type: 'label.created', resource: { type: 'label', id: name }, data: { name } }])
    return { row: made, created: true }
  })
  if (created) mailEvents(ctx).emitChange(orgId)
  return { label: presentCustom(row), created }
}

/** Deletes a custom label and takes it off every message that had it; not_found for one that does not exist. */
export async function deleteLabel(ctx: AppContext, orgId: string, name: string) {
  if (isSystem(name)) throw errors.validation('name', `${name} is a system label; it cannot be deleted`)
  const messages = await ctx.sql.begin(async tx => {
    if (!(await deleteLabelByName(tx, orgId, name))) throw errors.notFound('label')
    const count = await dropLabelFromMail(tx, orgId, name)
    await recordChanges(tx, [{ orgId, type: 'label.deleted', resource: { type: 'label', id: name }, data: { name, messages: count } }])
    return count
  })
  mailEvents(ctx).emitChange(orgId)
  return { name, deleted: true as const, messages }
}

/**
 * What a request's `add` and `remove` do: checked (`field: reason`), with the read state made
 * exclusive (adding read takes unread off, taking read off adds unread, and the reverse).
 */
async function planChange(tx: Tx, orgId: string, add: string[], remove: string[]): Promise<LabelChange> {
  if (!add.length && !remove.length) throw errors.validation('add', 'name at least one label to add or remove')
  for (const [field, names] of [
    ['add', add],
    ['remove', remove],
  ] as const) {
    const fixed = names.find(n => n === 'inbound' || n === 'sent')
    if (fixed) throw errors.validation(field, `${fixed} is set by the service`)
    if (names.includes('read') && names.includes('unread')) throw errors.validation(field, 'read and unread exclude each other')
  }
  const both = add.find(n => remove.includes(n))
  if (both) throw errors.validation('remove', `${both} is also in add`)
  const custom = [...new Set([...add, ...remove])].filter(n => !isSystem(n))
  if (custom.length) {
    const known = await lockKnownLabels(tx, orgId, custom)
    const missing = custom.find(n => !known.includes(n))
    if (missing)
      throw errors.validation(add.includes(missing) ? 'add' : 'remove', `${missing} is not a label of the organization; create it with POST /v1/labels`)
  }
  const other = (n: string) => (n === 'read' ? 'unread' : 'read')
  const readState = (names: string[]) => names.filter(n => n === 'read' || n === 'unread').map(other)
  return { add: [...new Set([...add, ...readState(remove)])], remove: [...new Set([...remove, ...readState(add)])] }
}

/** The feed's record of a message whose labels changed. */
function labelsChanged(orgId: string, r: RelabeledRow): ChangeInput {
  return {
    orgId,
    type: 'email.labels_changed',
    resource: { type: 'email', id: r.id },
    addresses: r.direction === 'inbound' ? r.rcpt_to : r.from_address ? [r.from_address] : [],
    data: {
      email_id: r.id,
      thread_id: r.thread_id,
      labels: r.labels,
      added: r.labels.filter(l => !r.before.includes(l)),
      removed: r.before.filter(l => !r.labels.includes(l)),
    },
  }
}

const changed = (r: RelabeledRow) => r.labels.length !== r.before.length || r.labels.some(l => !r.before.includes(l))

/**
 * Adds and removes labels on messages of the organization (of a connection key's address only):
 * some by id, all or nothing (an id not found is not_found), or every message of a thread.
 * Returns each message found with its labels now, in id order.
 */
export async function relabel(ctx: AppContext, auth: Auth, target: RelabelTarget, add: string[] = [], remove: string[] = []) {
  const rows = await ctx.sql.begin(async tx => {
    const change = await planChange(tx, auth.orgId, add, remove)
    const found = await relabelEmails(tx, auth.orgId, target, change, ofAddress(tx, auth.boundAddress))
    if ('threadId' in target && !found.length) throw errors.notFound('thread')
    if ('ids' in target) {
      const missing = target.ids.find(id => !found.some(r => r.id === id))
      if (missing) throw errors.notFound(`email ${missing}`)
    }
    await recordChanges(
      tx,
      found.filter(changed).map(r => labelsChanged(auth.orgId, r)),
    )
    return found
  })
  if (rows.some(changed)) mailEvents(ctx).emitChange(auth.orgId)
  return rows.map(r => ({ id: r.id, thread_id: r.thread_id, labels: r.labels }))
}
