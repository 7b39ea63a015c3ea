/**
 * The statements of the functions table that other features call: notes, wake and memories (through
 * the `memoryFunctions` seam, since functions stand above memories) ask which function a runtime
 * key belongs to, or whether one exists.
 */
import type { Tx } from '../db/client'
import type { MemoryFunctions } from '../memories/service'

/** The function whose runtime key (SERVICE_API_KEY) is `keyId`, deleted or not; none for any other key. */
export async function functionOfRuntimeKey(sql: Tx, orgId: string, keyId: string): Promise<{ id: string; deleted: boolean } | undefined> {
  const [fn] = await sql<{ id: string; deleted: boolean }[]>`
    select id, deleted_at is not null as deleted from functions where org_id = ${orgId} and runtime_key_id = ${keyId}`
  return fn
}

/** Whether the organization has the function `id`; a deleted one counts. */
export async function functionExists(sql: Tx, orgId: string, id: string): Promise<boolean> {
  return (await sql`select 1 from functions where org_id = ${orgId} and id = ${id}`).length > 0
}

/** The id of the organization's function `id` unless it is deleted. */
export async function liveFunctionId(sql: Tx, orgId: string, id: string): Promise<string | undefined> {
  const [fn] = await sql<{ id: string }[]>`select id from functions where org_id = ${orgId} and id = ${id} and deleted_at is null`
  return fn?.id
}

/** What memories ask of the functions (the `memoryFunctions` seam, plugged in by src/plugins.ts). */
export const memoryFunctions: MemoryFunctions = { ofRuntimeKey: functionOfRuntimeKey, liveId: liveFunctionId }
