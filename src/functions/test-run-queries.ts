/** The function_test_runs table (functions/ owns it): a test email's run, for its trace. */
import type { Sql } from '../db/client'

export interface TestRunRow {
  id: string
  email_id: string | null
  recipient: string
  created_at: Date
}

export async function insertTestRun(sql: Sql, r: { id: string; orgId: string; functionId: string; recipient: string }): Promise<void> {
  await sql`insert into function_test_runs (id, org_id, function_id, recipient) values (${r.id}, ${r.orgId}, ${r.functionId}, ${r.recipient})`
}

/** Records the email a test run's message was stored as. */
export async function setTestRunEmail(sql: Sql, id: string, emailId: string): Promise<void> {
  await sql`update function_test_runs set email_id = ${emailId} where id = ${id}`
}

export async function testRunById(sql: Sql, orgId: string, functionId: string, id: string): Promise<TestRunRow | undefined> {
  const [run] = await sql<TestRunRow[]>`
    select id, email_id, recipient, created_at from function_test_runs where id = ${id} and function_id = ${functionId} and org_id = ${orgId}`
  return run
}
