/**
 * The ledger's CSV export at its size ceiling: more rows than CSV_MAX_ROWS are cut to the newest
 * CSV_MAX_ROWS and the answer says so with `X-Truncated: true`; a filtered export under the
 * ceiling is whole and has no such header. The rows are written straight to the tables (ten
 * thousand settlements on a chain would take minutes); the chain tests cover how they get there.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { testApp, testSql, type TestApp } from '../helpers/app'
import { CSV_MAX_ROWS } from '../../src/x402/ledger.service'
import { x402Org } from './helpers'

const sql = await testSql()

describe('ledger CSV ceiling', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await testApp()
  })

  test(`more than ${CSV_MAX_ROWS} rows: the newest ${CSV_MAX_ROWS}, X-Truncated: true; under the ceiling, whole and no X-Truncated`, async () => {
    const org = await x402Org()
    const rows = CSV_MAX_ROWS + 1
    // ids that sort by n (the ledger is newest first by id); every tenth row failed
    const id = (prefix: string, n: string) => sql.unsafe(`('${prefix}' || lpad(to_hex(${n}), 12, '0'))::uuid`)
    await sql`
      with n as (select generate_series(1, ${rows}) as n),
      c as (
        insert into x402_challenges (id, org_id, network, amount, asset, pay_to, description, max_timeout_seconds, interaction_id, challenge_step_id,
                                     challenge_nonce, authorization_nonce, expires_at)
        select ${id('00000000-0000-7000-8000-', 'n')}, ${org.orgId}, 'base-sepolia', 1000, '0x036CbD53842c5426634e7929541eC2318f3dCF7e', '0x00000000000000000000000000000000000000aa',
               '', 300, 'i@example.test', gen_random_uuid(), 'x', 'x', now() + interval '1 hour'
          from n),
      s as (
        insert into x402_settlements (id, challenge_id, payee_org, network, chain_id, asset, payer, nonce, amount, payment, status)
        select ${id('00000000-0000-7000-9000-', 'n')}, ${id('00000000-0000-7000-8000-', 'n')}, ${org.orgId}, 'base-sepolia', 84532,
               '0x036cbd53842c5426634e7929541ec2318f3dcf7e', '0x00000000000000000000000000000000000000bb', lpad(to_hex(n), 64, '0'), 1000, '{}',
               case when n % 10 = 0 then 'failed' else 'settled' end
          from n)
      insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty, failure_reason)
      select ${id('00000000-0000-7000-a000-', 'n')}, ${org.orgId}, ${id('00000000-0000-7000-9000-', 'n')}, ${id('00000000-0000-7000-8000-', 'n')}, 'received',
             case when n % 10 = 0 then 'failed' else 'settled' end, 1000, '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 'base-sepolia',
             '0x00000000000000000000000000000000000000bb', case when n % 10 = 0 then 'insufficient_funds' end
        from n`

    const csv = await t.request('GET', '/v1/x402/payments', { key: org.key, headers: { accept: 'text/csv' } })
    expect(csv.status).toBe(200)
    expect(csv.headers.get('x-truncated')).toBe('true')
    const lines = (csv.body as string).trimEnd().split('\r\n')
    expect(lines).toHaveLength(CSV_MAX_ROWS + 1)
    const ids = lines.slice(1).map(l => l.split(',')[0]!)
    const idOf = (n: number) => `00000000-0000-7000-a000-${n.toString(16).padStart(12, '0')}`
    // newest first, and the oldest row is the one cut
    expect(ids[0]).toBe(idOf(rows))
    expect(ids.at(-1)).toBe(idOf(2))
    expect(ids).not.toContain(idOf(1))

    // the failed rows only: a thousand, under the ceiling
    const failed = await t.request('GET', '/v1/x402/payments?status=failed', { key: org.key, headers: { accept: 'text/csv' } })
    expect(failed.status).toBe(200)
    expect(failed.headers.get('x-truncated')).toBeNull()
    const failedLines = (failed.body as string).trimEnd().split('\r\n').slice(1)
    expect(failedLines).toHaveLength(Math.floor(rows / 10))
    expect(failedLines.every(l => l.split(',')[3] === 'failed' && l.split(',')[9] === 'insufficient_funds')).toBe(true)
  })
})
