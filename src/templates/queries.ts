/** The email_templates table (templates/ owns it): its row type and every statement on it. */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { Variable } from './render'

export interface TemplateRow {
  id: string
  org_id: string
  name: string
  alias: string | null
  subject: string
  body_text: string
  body_html: string | null
  variables: Variable[]
  created_at: Date
  updated_at: Date
}

/** What a template's statements write. */
export type TemplateFields = Pick<TemplateRow, 'name' | 'subject' | 'body_text' | 'variables'> & { alias?: string | null; body_html?: string | null }

export async function insertTemplateRow(sql: Tx, orgId: string, fields: TemplateFields): Promise<TemplateRow> {
  const [row] = await sql<TemplateRow[]>`
    insert into email_templates (id, org_id, name, alias, subject, body_text, body_html, variables)
    values (${randomUUIDv7()}, ${orgId}, ${fields.name}, ${fields.alias ?? null}, ${fields.subject}, ${fields.body_text}, ${fields.body_html ?? null}, ${sql.json(fields.variables as never)})
    returning *`
  return row!
}

/** The organization's template `id`; `lock` takes it for update. */
export async function templateById(sql: Tx, orgId: string, id: string, lock = false): Promise<TemplateRow | undefined> {
  const [row] = await sql<TemplateRow[]>`select * from email_templates where org_id = ${orgId} and id = ${id} ${lock ? sql`for update` : sql``}`
  return row
}

export async function templateWithAlias(sql: Tx, orgId: string, alias: string): Promise<TemplateRow | undefined> {
  const [row] = await sql<TemplateRow[]>`select * from email_templates where org_id = ${orgId} and alias = ${alias}`
  return row
}

export function templatesPage(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<TemplateRow>(sql, { columns: sql`*`, from: sql`email_templates`, where: sql`org_id = ${orgId}`, page })
}

export async function updateTemplateRow(tx: Tx, id: string, fields: TemplateFields): Promise<TemplateRow> {
  const [row] = await tx<TemplateRow[]>`
    update email_templates set name = ${fields.name}, alias = ${fields.alias ?? null}, subject = ${fields.subject}, body_text = ${fields.body_text},
           body_html = ${fields.body_html ?? null}, variables = ${tx.json(fields.variables as never)}, updated_at = now()
     where id = ${id}
    returning *`
  return row!
}

/** Deletes the organization's template `id`; whether there was one. */
export async function deleteTemplateRow(sql: Sql, orgId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from email_templates where org_id = ${orgId} and id = ${id} returning id`
  return rows.length > 0
}
