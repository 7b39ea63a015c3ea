/** The cleanup job removes expired identity rows (and what modules above it plug in) and keeps everything still in use. */
import { expect, test } from 'bun:test'
import { createOrg, testApp, testSql } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { person } from '../oauth/helpers'
import { cleanup } from '../../src/maintenance/cleanup.job'
import { loginTokens, newEmail, startLogin } from '../helpers/identity'
import { findSession, startSession } from '../../src/console/session'

const t = await testApp()
const sql = await testSql()

test('expired device logins, signups, invitations and OAuth tokens go; live ones stay', async () => {
  const expiredLogin = await startLogin(t)
  const liveLogin = await startLogin(t)
  await sql`update cli_device_codes set expires_at = now() - interval '1 minute' where device_code_hash = sha256(${expiredLogin.device_code}::bytea)`

  const expiredSignup = expectOk(await t.request('POST', '/v1/cli/signup/start', { body: { email: newEmail(), terms_accepted: true } }), 201).signup_token
  const liveSignup = expectOk(await t.request('POST', '/v1/cli/signup/start', { body: { email: newEmail(), terms_accepted: true } }), 201).signup_token
  await sql`update signups set expires_at = now() - interval '1 minute' where token_hash = sha256(${expiredSignup}::bytea)`

  const org = await createOrg()
  const address = await managedAddress(t.ctx, org.orgId)
  const expiredInvitation = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address } }), 201)
  const claimed = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address } }), 201)
  const key = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: claimed.invitation_code } })).connection_key
  await sql`update agent_connections set invitation_expires_at = now() - interval '1 minute' where id in ${sql([expiredInvitation.id, claimed.id])}`

  const who = await person()
  const tokens = await loginTokens(t, who)
  const [token] = await sql<{ grant_id: string }[]>`select grant_id from oauth_tokens where hash = sha256(${tokens.access_token}::bytea)`
  await sql`update oauth_tokens set expires_at = now() - interval '1 minute' where hash = sha256(${tokens.access_token}::bytea)`

  await cleanup(t.ctx)

  const deviceCodes =
    await sql`select device_code_hash from cli_device_codes where device_code_hash in (sha256(${expiredLogin.device_code}::bytea), sha256(${liveLogin.device_code}::bytea))`
  expect(deviceCodes).toHaveLength(1)
  const signups = await sql`select 1 from signups where token_hash in (sha256(${expiredSignup}::bytea), sha256(${liveSignup}::bytea))`
  expect(signups).toHaveLength(1)
  const connections = await sql<{ id: string }[]>`select id from agent_connections where id in ${sql([expiredInvitation.id, claimed.id])}`
  expect(connections.map(c => c.id)).toEqual([claimed.id])
  // a claimed connection outlives its invitation's expiry
  expectOk(await t.request('GET', '/v1/emails', { key }))
  // the expired access token is gone, its refresh token and grant stay
  const left = await sql<{ kind: string }[]>`select kind from oauth_tokens where grant_id = ${token!.grant_id}`
  expect(left.map(r => r.kind)).toEqual(['refresh'])
})

test('x402 totals of past periods go (days after two days, months after two months); the current ones stay', async () => {
  const org = await createOrg()
  const day = (n: number) => sql`(now() at time zone 'utc')::date - ${n}::int`
  await sql`
    insert into x402_totals (org_id, direction, span, start, amount) values
      (${org.orgId}, 'received', 'day', ${day(0)}, 1), (${org.orgId}, 'received', 'day', ${day(2)}, 2), (${org.orgId}, 'received', 'day', ${day(3)}, 3),
      (${org.orgId}, 'received', 'month', date_trunc('month', now() at time zone 'utc')::date, 4), (${org.orgId}, 'received', 'month', ${day(70)}, 5)`
  await cleanup(t.ctx)
  const left = await sql<{ amount: string }[]>`select amount::text from x402_totals where org_id = ${org.orgId} order by amount`
  expect(left.map(r => r.amount)).toEqual(['1', '2', '4'])
})

test('send counts older than two days go; those any window still counts stay', async () => {
  const org = await createOrg()
  await sql`
    insert into send_counts (org_id, span, start, sends) values
      (${org.orgId}, 'hour', date_trunc('hour', now()), 1), (${org.orgId}, 'hour', date_trunc('hour', now() - interval '1 day'), 2),
      (${org.orgId}, 'hour', date_trunc('hour', now() - interval '3 days'), 3), (${org.orgId}, 'minute', now() - interval '2 days 1 minute', 4)`
  await cleanup(t.ctx)
  const left = await sql<{ sends: number }[]>`select sends from send_counts where org_id = ${org.orgId} order by sends`
  expect(left.map(r => r.sends)).toEqual([1, 2])
})

test("expired console sessions go, whoever's they are (the console plugs them into the job); live ones stay", async () => {
  const who = await person()
  const [expired, live] = await Promise.all([startSession(sql, who.userId, who.orgId), startSession(sql, who.userId, who.orgId)])
  await sql`update console_sessions set expires_at = now() - interval '1 minute' where token_hash = sha256(${expired}::bytea)`
  await cleanup(t.ctx)
  const left = await sql`select 1 from console_sessions where token_hash in (sha256(${expired}::bytea), sha256(${live}::bytea))`
  expect(left).toHaveLength(1)
  expect(await findSession(sql, live)).not.toBeNull()
})
