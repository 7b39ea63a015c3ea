/** Stored email templates: create, read, update, delete, validate, and rendering for send-mail. */
import type { Sql, Tx } from '../db/client'
import { isUniqueViolation } from '../db/errors'
import { ApiError, errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { deleteTemplateRow, insertTemplateRow, type TemplateRow, templateWithAlias, templateById, templatesPage, updateTemplateRow } from './queries'
import { checkTemplate, dataProblems, render, type Rendered, type TemplateSource, type Variable } from './render'

export interface TemplateInput {
  name: string
  alias?: string | null
  subject: string
  body_text: string
  body_html?: string | null
  variables?: Variable[]
}

export const presentTemplate = (r: TemplateRow) => ({
  id: r.id,
  name: r.name,
  alias: r.alias,
  subject: r.subject,
  body_text: r.body_text,
  body_html: r.body_html,
  variables: r.variables,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
})

const aliasTaken = (alias: string) => errors.conflict(`alias: "${alias}" is already used by another template`, { reason: 'alias_taken' })

/** Runs a write that may hit the alias index; 409 conflict instead of a database error. */
async function mapAlias<T>(alias: string | null | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (isUniqueViolation(error, 'email_templates_alias_key')) throw aliasTaken(alias ?? '')
    throw error
  }
}

/** Inserts a checked template in the caller's transaction (or statement). */
export async function insertTemplate(sql: Tx, orgId: string, input: TemplateInput): Promise<TemplateRow> {
  const variables = input.variables ?? []
  checkTemplate({ ...input, variables })
  return mapAlias(input.alias, () => insertTemplateRow(sql, orgId, { ...input, variables }))
}

export async function getTemplate(sql: Tx, orgId: string, id: string): Promise<TemplateRow> {
  const row = await templateById(sql, orgId, id)
  if (!row) throw errors.notFound('template')
  return row
}

async function templateByAlias(sql: Tx, orgId: string, alias: string): Promise<TemplateRow> {
  const row = await templateWithAlias(sql, orgId, alias)
  if (!row) throw errors.notFound(`template alias "${alias}"`)
  return row
}

/** A stored template by id or alias (exactly one); `field` names the reference in errors. */
export async function findTemplate(sql: Tx, orgId: string, ref: { id?: string; alias?: string }, field: string): Promise<TemplateRow> {
  if ((ref.id === undefined) === (ref.alias === undefined)) throw errors.validation(field, 'needs exactly one of id and alias')
  return ref.id !== undefined ? getTemplate(sql, orgId, ref.id) : templateByAlias(sql, orgId, ref.alias!)
}

export function listTemplates(sql: Sql, orgId: string, page: PageRequest) {
  return templatesPage(sql, orgId, page)
}

export async function updateTemplate(sql: Sql, orgId: string, id: string, patch: Partial<TemplateInput>): Promise<TemplateRow> {
  return sql.begin(async tx => {
    const current = await templateById(tx, orgId, id, true)
    if (!current) throw errors.notFound('template')
    const next = { ...current, ...patch, variables: patch.variables ?? current.variables }
    checkTemplate(next)
    return mapAlias(next.alias, () => updateTemplateRow(tx, id, next))
  })
}

export async function deleteTemplate(sql: Sql, orgId: string, id: string): Promise<{ id: string; deleted: true }> {
  if (!(await deleteTemplateRow(sql, orgId, id))) throw errors.notFound('template')
  return { id, deleted: true }
}

/** Renders a stored template for send-mail; errors name `template...`. */
export async function renderStored(sql: Tx, orgId: string, ref: { id?: string; alias?: string; data?: Record<string, unknown> }): Promise<Rendered> {
  const row = await findTemplate(sql, orgId, ref, 'template')
  return render(row, ref.data ?? {}, 'template.data')
}

/**
 * Checks a template (given, or stored) and renders it with test data, reporting rather than
 * throwing what is wrong: the template's own errors, missing and undeclared variables.
 */
export async function validateTemplate(
  sql: Sql,
  orgId: string,
  body: { template?: Omit<TemplateInput, 'name'>; id?: string; alias?: string; data?: Record<string, unknown> },
) {
  const given = body.template !== undefined
  if ([given, body.id !== undefined, body.alias !== undefined].filter(Boolean).length !== 1)
    throw errors.validation('template', 'give exactly one of template, id and alias')
  const source: TemplateSource = given ? { ...body.template!, variables: body.template!.variables ?? [] } : await findTemplate(sql, orgId, body, 'id')
  const data = body.data ?? {}
  const report = { valid: false, errors: [] as string[], missing: [] as string[], undeclared: [] as string[], rendered: null as Rendered | null }
  try {
    checkTemplate(source, given ? 'template.' : '')
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    report.errors.push(e.message)
    return report
  }
  Object.assign(report, dataProblems(source, data))
  try {
    report.rendered = render(source, data, 'data')
    report.valid = true
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    report.errors.push(e.message)
  }
  return report
}
