/** The labels table (labels/ owns it): its row type and every statement on it. */
import type { Sql, Tx } from '../db/client'

export interface LabelRow {
  name: string
  created_at: Date
}

/** The organization's custom labels, by name. */
export function labelsOf(sql: Sql, orgId: string) {
  return sql<LabelRow[]>`select name, created_at from labels where org_id = ${orgId} order by name`
}

/** Makes the organization's label creates take turns (a transaction lock on its key), so two at the limit cannot both pass. */
export async function lockOrgLabels(tx: Tx, orgId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`labels:${orgId}`}, 0))`
}

export async function labelByName(tx: Tx, orgId: string, name: string): Promise<LabelRow | undefined> {
  const [row] = await tx<LabelRow[]>`select name, created_at from labels where org_id = ${orgId} and name = ${name}`
  return row
}

/** How many custom labels the organization keeps. */
export async function countLabels(tx: Tx, orgId: string): Promise<number> {
  const [kept] = await tx<{ count: number }[]>`select count(*)::int as count from labels where org_id = ${orgId}`
  return kept!.count
}

export async function insertLabel(tx: Tx, orgId: string, name: string): Promise<LabelRow> {
  const [made] = await tx<LabelRow[]>`insert into labels (org_id, name) values (${orgId}, ${name}) returning name, created_at`
  return made!
}

/** Deletes the label; whether it existed. */
export async function deleteLabelByName(tx: Tx, orgId: string, name: string): Promise<boolean> {
  const gone = await tx`delete from labels where org_id = ${orgId} and name = ${name}`
  return gone.count > 0
}

/**
 * Which of `names` are labels of the organization, locked for share: held to the commit, so a
 * label deleted meanwhile waits, and then takes itself off the messages being labeled too.
 */
export async function lockKnownLabels(tx: Tx, orgId: string, names: string[]): Promise<string[]> {
  const rows = await tx<{ name: string }[]>`select name from labels where org_id = ${orgId} and name = any(${names}::text[]) for share`
  return rows.map(r => r.name)
}
