/** The suppression list of an organization, managed through the API: listed, added to by hand, deleted from. */
import type { AppContext } from '../context'
import { recordChanges } from '../changes/record'
import { errors } from '../errors'
import { iso } from '../http/timestamps'
import type { PageRequest } from '../http/pagination'
import { addSuppressions, deleteSuppressionRow, findSuppression, listSuppressionRows, type SuppressionRow } from './queries'
import { suppressionChange } from './record'

export const presentSuppression = (r: SuppressionRow) => ({
  id: r.id,
  address: r.address,
  reason: r.reason,
  detail: r.detail,
  send_id: r.send_id,
  created_at: iso(r.created_at)!,
})

export const listSuppressions = (ctx: AppContext, orgId: string, page: PageRequest) => listSuppressionRows(ctx.sql, orgId, page)

/** Adds an address by hand; one already listed is answered as it is (`created` false). */
export async function addSuppression(ctx: AppContext, orgId: string, address: string, detail: string | null) {
  return ctx.sql.begin(async tx => {
    const [added] = await addSuppressions(tx, [{ orgId, address, reason: 'manual', detail, sendId: null }])
    if (added) await recordChanges(tx, [suppressionChange(added)])
    const row = added ?? (await findSuppression(tx, orgId, address.toLowerCase()))
    if (!row) throw errors.conflict('address: was deleted from the suppression list meanwhile; try again')
    return { row, created: added !== undefined }
  })
}

/** Deletes an address from the list, so sends to it go out again; an address not listed is not_found. */
export async function deleteSuppression(ctx: AppContext, orgId: string, address: string) {
  return ctx.sql.begin(async tx => {
    const row = await deleteSuppressionRow(tx, orgId, address.toLowerCase())
    if (!row) throw errors.notFound('suppression')
    await recordChanges(tx, [suppressionChange(row, 'suppression.deleted')])
    return row
  })
}
