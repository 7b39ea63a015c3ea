/** The filters table (sender filters): its row type and the statements of the filters' service. */
import { randomUUIDv7 } from 'bun'
import type { Static } from 'elysia'
import type { Sql } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { FilterType as FilterTypeSchema } from './filters.model'

export type FilterType = Static<typeof FilterTypeSchema>

export interface FilterRow {
  id: string
  org_id: string
  type: FilterType
  pattern: string
  domain_id: string | null
  enabled: boolean
  created_at: Date
}

export async function insertFilter(sql: Sql, orgId: string, type: FilterType, pattern: string, domainId: string | null): Promise<FilterRow> {
  const [row] = await sql<FilterRow[]>`
    insert into filters (id, org_id, type, pattern, domain_id)
    values (${randomUUIDv7()}, ${orgId}, ${type}, ${pattern}, ${domainId})
    returning *`
  return row!
}

export function filtersPage(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<FilterRow>(sql, { columns: sql`*`, from: sql`filters`, where: sql`org_id = ${orgId}`, page })
}

export async function filterById(sql: Sql, orgId: string, id: string): Promise<FilterRow | undefined> {
  const [row] = await sql<FilterRow[]>`select * from filters where id = ${id} and org_id = ${orgId}`
  return row
}

export async function updateFilterEnabled(sql: Sql, orgId: string, id: string, enabled: boolean): Promise<FilterRow | undefined> {
  const [row] = await sql<FilterRow[]>`update filters set enabled = ${enabled} where id = ${id} and org_id = ${orgId} returning *`
  return row
}

/** Deletes the filter; its id, when it existed. */
export async function deleteFilterById(sql: Sql, orgId: string, id: string): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }[]>`delete from filters where id = ${id} and org_id = ${orgId} returning id`
  return row
}
