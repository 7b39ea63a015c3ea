/** The endpoint_tests table: the test sends an organization made, counted for their rate limits (test-send.ts). */
import type { Sql, Tx } from '../db/client'

/** Makes the organization's test sends take their slots in turns (a transaction lock on its key), so two cannot both pass a limit. */
export async function lockEndpointTests(tx: Tx, orgId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`endpoint-tests:${orgId}`}, 0))`
}

/** The organization's test sends of the last hour, and of the last minute those that count per minute. */
export async function recentEndpointTests(tx: Tx, orgId: string): Promise<{ hour: number; minute: number }> {
  const [counts] = await tx<{ hour: number; minute: number }[]>`
    select count(*)::int as hour, count(*) filter (where counts_per_minute and at > now() - interval '1 minute')::int as minute
      from endpoint_tests where org_id = ${orgId} and at > now() - interval '1 hour'`
  return counts!
}

/** Records a test send, counted per minute until `uncountEndpointTest`; its row's ctid, the slot. */
export async function insertEndpointTest(tx: Tx, orgId: string): Promise<string> {
  const [row] = await tx<{ ctid: string }[]>`insert into endpoint_tests (org_id, counts_per_minute) values (${orgId}, true) returning ctid::text`
  return row!.ctid
}

/** Stops counting the test send of slot `ctid` against the per-minute limit. */
export async function uncountEndpointTest(sql: Sql, ctid: string): Promise<void> {
  await sql`update endpoint_tests set counts_per_minute = false where ctid = ${ctid}::tid`
}
