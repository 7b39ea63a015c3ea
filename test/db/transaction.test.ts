/**
 * Pipelined transactions (src/db/transaction.ts) give their connection back clean: committed or
 * rolled back, whatever failed in them, so the next user of the pool is not left inside an
 * aborted transaction. On a pool of one connection, so that the next statement lands on it.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connectUrl, type Sql } from '../../src/db/client'
import { pipelinedTransaction } from '../../src/db/transaction'
import { testDatabase } from '../helpers/database'

const db = await testDatabase()
let sql: Sql

beforeAll(async () => {
  sql = db.kind === 'postgres' ? connectUrl(db.url, 1) : db.sql
  await sql`create table if not exists pipelined_test (id int primary key, note text)`
  await sql`insert into pipelined_test values (1, 'first') on conflict do nothing`
})
afterAll(async () => {
  await sql`drop table if exists pipelined_test`
  if (db.kind === 'postgres') await sql.end({ timeout: 1 })
})

test('a statement failing in the COMMIT round trip rolls back the rest, and the connection comes back out of the transaction', async () => {
  // statement texts new to the connection: postgres.js sends each only after describing it, so
  // the ones behind it wait on the reserved connection, the COMMIT among them
  const tag = crypto.randomUUID()
  const failed = await pipelinedTransaction(sql, async (tx, commit) => {
    const other = tx.unsafe(`insert into pipelined_test values ($1, $2) -- ${tag}`, [2, 'second']).execute()
    const duplicate = tx.unsafe(`insert into pipelined_test values ($1, $2) -- ${tag} again`, [1, 'again']).execute()
    return commit(other, duplicate, tx.unsafe(`select $1::int as n -- ${tag}`, [3]))
  }).catch((e: { code?: string }) => e)
  expect(failed).toMatchObject({ code: '23505' })

  const rows = await sql<{ id: number; note: string }[]>`select id, note from pipelined_test order by id`
  expect([...rows]).toEqual([{ id: 1, note: 'first' }])
  // each statement its own transaction, not one left open
  const xact = async () => (await sql<{ id: string }[]>`select txid_current()::text as id`)[0]!.id
  expect(await xact()).not.toBe(await xact())
})

test('a callback that throws before commit rolls back, and one that commits keeps its writes', async () => {
  const thrown = await pipelinedTransaction(sql, async tx => {
    await tx`insert into pipelined_test values (${4}, ${'rolled back'})`
    throw new Error('changed its mind')
  }).catch((e: Error) => e.message)
  expect(thrown).toBe('changed its mind')
  await pipelinedTransaction(sql, (tx, commit) => commit(tx`insert into pipelined_test values (${5}, ${'kept'})`.execute()))
  expect((await sql<{ id: number }[]>`select id from pipelined_test order by id`).map(r => r.id)).toEqual([1, 5])
})
