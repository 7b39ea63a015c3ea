/** What the inbound tests that drive `ingest` and its batches share. */
import { rfc822 } from '../../helpers/mail'
import { testSql } from '../../helpers/app'

/**
 * Holds an organization's row in a transaction of its own until the returned release: a batch
 * storing mail for that organization waits on the lock (`waiting` resolves once it does), and
 * what arrives meanwhile queues for the next batch. Needs a second connection.
 */
export async function holdOrgRow(orgId: string) {
  const sql = await testSql()
  let release!: () => void
  let locked!: () => void
  const isLocked = new Promise<void>(resolve => (locked = resolve))
  const holder = sql.begin(async tx => {
    await tx`select from orgs where id = ${orgId} for update`
    locked()
    await new Promise<void>(resolve => (release = resolve))
  })
  await isLocked
  return {
    async waiting() {
      while (!(await sql`select from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length) await Bun.sleep(5)
    },
    async release() {
      release()
      await holder
    },
  }
}

/** A message from sam@sender.example, ready for `ingest`. */
export const inbound = (to: string, headers: Record<string, string>) => ({
  raw: new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: to, ...headers }, 'x\n')),
  mailFrom: 'sam@sender.example',
  rcptTo: [to],
  remoteIp: '127.0.0.1',
  tls: false,
})
