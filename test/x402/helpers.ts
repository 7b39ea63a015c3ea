/** Organizations entitled to x402, wallets and payout registration for the x402 tests. */
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createOrg, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { createApiKey } from '../../src/auth/api-keys'
import { addMember } from '../../src/account/membership-queries'
import { ensureUser } from '../../src/account/user-queries'
import type { Role } from '../../src/auth/principal'

/** An organization on the power plan (which includes x402_payments). */
export const x402Org = () => createOrg({ plan: 'power' })

export const wallet = (): PrivateKeyAccount => privateKeyToAccount(generatePrivateKey())

/** Another API key of the organization: created by a new person of `role`, or by nobody. */
export async function keyOf(org: TestOrg, role: Role | null): Promise<string> {
  const sql = await testSql()
  return sql.begin(async tx => {
    let userId: string | null = null
    if (role) {
      userId = await ensureUser(tx, `${role}-${crypto.randomUUID()}@example.test`)
      await addMember(tx, org.orgId, userId, role)
    }
    return (await createApiKey(tx, org.orgId, userId, `${role ?? 'no creator'} key`)).key
  })
}

/** Registers `account` as the default payout address of the network, through the API. */
export async function registerPayout(t: TestApp, org: TestOrg, account: PrivateKeyAccount, network = 'base-sepolia') {
  const statement = expectOk(await t.request('GET', `/v1/x402/payout-addresses/message?network=${network}&address=${account.address}`, { key: org.key }))
  const signature = await account.signMessage({ message: statement.message })
  return expectOk(
    await t.request('POST', '/v1/x402/payout-addresses', { key: org.key, body: { network, address: account.address, message: statement.message, signature } }),
    201,
  )
}

export async function newChallenge(t: TestApp, org: TestOrg, body: Record<string, unknown> = {}) {
  return expectOk(
    await t.request('POST', '/v1/x402/challenges', { key: org.key, body: { amount: '10000', network: 'base-sepolia', description: 'a report', ...body } }),
    201,
  )
}

/**
 * A settlement's state after its pay returned: its attempts, whether its settle job is still
 * there, and whether its lock is free (tried from another connection: a lock left held by a pooled
 * connection of the service would make every later settler of it wait forever).
 */
export async function settlementAfterPay(challengeId: string) {
  const sql = await testSql()
  const [row] = await sql<{ id: string; attempts: number; jobs: number }[]>`
    select s.id, s.attempts, (select count(*)::int from jobs j where j.kind = 'x402.settle' and j.payload->>'settlement_id' = s.id::text) as jobs
      from x402_settlements s where s.challenge_id = ${challengeId}`
  if (!row) return null
  const [lock] = await sql.begin(tx => tx<{ free: boolean }[]>`select pg_try_advisory_xact_lock(hashtextextended(${`x402-settle:${row.id}`}, 0)) as free`)
  return { attempts: row.attempts, jobs: row.jobs, lockFree: lock!.free }
}
