/**
 * sql/0031_x402_totals.sql on a database that already has settlements: the running totals start
 * from the settlements of the current periods that count (not failed), so the caps read after the
 * upgrade what they summed before it.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrate } from '../../src/db/migrate'
import { connectUrl } from '../../src/db/client'
import { testDatabase } from '../helpers/database'

const db = await testDatabase()
const MIGRATION = '0031_x402_totals.sql'
const sqlDir = join(import.meta.dir, '../../sql')

describe.skipIf(db.kind !== 'postgres')('x402 totals migration', () => {
  const admin = postgres(db.url, { max: 1, onnotice: () => {} })
  const name = `agent_mail_totals_${process.pid}_${Date.now().toString(36)}`
  const dir = mkdtempSync(join(tmpdir(), 'migrations-'))
  afterAll(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
    rmSync(dir, { recursive: true, force: true })
  })

  test('backfills the current day and month of each payee, and the current day of each paying organization, from settlements that did not fail', async () => {
    await admin.unsafe(`create database ${name}`)
    const sql = connectUrl(Object.assign(new URL(db.url), { pathname: `/${name}` }).toString(), 1)
    try {
      for (const file of readdirSync(sqlDir)) if (file < MIGRATION) cpSync(join(sqlDir, file), join(dir, file))
      await migrate(sql, dir)
      const [payee, payer, other] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
      await sql`insert into orgs (id, name, plan) values (${payee}, 'payee', 'developer'), (${payer}, 'payer', 'developer'), (${other}, 'other', 'developer')`
      let n = 0
      const settlement = async (payeeOrg: string, payerOrg: string | null, amount: number, status: string, createdAt: string) => {
        const id = crypto.randomUUID()
        await sql`
          insert into x402_challenges (id, org_id, network, amount, asset, pay_to, description, max_timeout_seconds, interaction_id, challenge_step_id, challenge_nonce, authorization_nonce, expires_at)
          values (${id}, ${payeeOrg}, 'base-sepolia', ${amount}, '0xa', '0xb', '', 60, 'i', ${crypto.randomUUID()}, 'n', 'a', now())`
        await sql`
          insert into x402_settlements (id, challenge_id, payee_org, payer_org, network, chain_id, asset, payer, nonce, amount, payment, status, created_at)
          values (${id}, ${id}, ${payeeOrg}, ${payerOrg}, 'base-sepolia', 84532, '0xa', '0xc', ${String(n++)}, ${amount}, '{}', ${status}, ${createdAt}::timestamptz)`
      }
      const today = `date_trunc('day', now() at time zone 'utc') at time zone 'utc'`
      const at = async (expression: string) => (await sql.unsafe<{ t: string }[]>(`select (${expression})::text as t`))[0]!.t
      const now = await at('now()')
      const startOfMonth = await at(`date_trunc('month', now() at time zone 'utc') at time zone 'utc'`)
      const yesterday = await at(`${today} - interval '1 hour'`)
      await settlement(payee, payer, 100, 'settled', now)
      await settlement(payee, payer, 20, 'pending', now)
      await settlement(payee, payer, 4000, 'failed', now)
      await settlement(payee, null, 3, 'settled', now)
      await settlement(payee, payer, 500, 'settled', startOfMonth)
      await settlement(payee, payer, 60000, 'settled', yesterday)
      await settlement(other, payee, 7, 'settled', now)

      expect(await migrate(sql, sqlDir)).toContain(MIGRATION)
      const current = (span: string) => `date_trunc('${span}', now() at time zone 'utc')::date`
      const read = async (org: string, direction: string, span: string) =>
        (
          await sql.unsafe<{ amount: string }[]>(
            `select amount::text from x402_totals where org_id = $1 and direction = $2 and span = $3 and start = ${current(span)}`,
            [org, direction, span],
          )
        )[0]?.amount
      // the month holds what is not failed since its first day (yesterday's too, unless today is the 1st)
      const yesterdayInMonth = yesterday >= startOfMonth
      const startIsToday = (await at(`${current('month')} = ${current('day')}`)) === 'true'
      expect(await read(payee, 'received', 'day')).toBe(String(123 + (startIsToday ? 500 : 0)))
      expect(await read(payee, 'received', 'month')).toBe(String(623 + (yesterdayInMonth ? 60000 : 0)))
      expect(await read(payer, 'sent', 'day')).toBe(String(120 + (startIsToday ? 500 : 0)))
      expect(await read(payee, 'sent', 'day')).toBe('7')
      expect(await read(other, 'received', 'day')).toBe('7')
      expect(await read(payer, 'received', 'day')).toBeUndefined()
    } finally {
      await sql.end()
    }
  })
})
