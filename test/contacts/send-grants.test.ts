/**
 * Contacts and the reply-only gate (send_to_known_addresses): admitting a network agent records
 * a send grant that lets a reply-only organization write to it first, for the address it was
 * admitted under, while the agent accepts contacts in a network both are active in. A contact
 * added by hand records none (recipient_grant_not_recorded); a withdrawn consent is
 * recipient_grant_denied.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { relayOf } from '../../src/sending/relay'
import { unique } from '../helpers/identity'

let relay: TestRelay
let t: TestApp
let replyOnly: TestOrg
let provider: TestOrg
let sender: string
let otherSender: string
let agent: string
let networkId: string

beforeAll(async () => {
  relay = await startTestRelay()
  t = await testApp({ SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000' })
  replyOnly = await createOrg({ plan: 'agent' })
  provider = await createOrg()
  sender = await managedAddress(t.ctx, replyOnly.orgId)
  otherSender = await managedAddress(t.ctx, replyOnly.orgId)
  agent = await managedAddress(t.ctx, provider.orgId)
  expectOk(await t.request('PUT', `/v1/published-agents/${agent}`, { key: provider.key, body: { display_name: 'Scheduler', skills: ['calendar'] } }), 201)
  networkId = expectOk(await t.request('POST', '/v1/networks', { key: provider.key, body: { name: `n-${unique()}` } }), 201).id
  expectOk(await t.request('POST', `/v1/networks/${networkId}/members`, { key: provider.key, body: { org_id: replyOnly.orgId } }), 201)
  expectOk(await t.request('POST', `/v1/networks/${networkId}/accept`, { key: replyOnly.key }))
})
afterAll(async () => {
  await relayOf(t.ctx).close()
  await relay.stop()
})

const send = (from: string, to: string) =>
  t.request('POST', '/v1/send-mail', { key: replyOnly.key, body: { from, to, subject: `hi ${unique()}`, body_text: 'hello' } })
const gateOf = (res: { body: any }) => res.body.error.gates.map((g: { name: string; reason: string; subject: string }) => [g.name, g.reason, g.subject])

describe('the reply-only gate and contacts', () => {
  test('before admission the agent is unknown: recipient_not_known', async () => {
    const res = await send(sender, agent)
    expectError(res, 403, 'recipient_not_allowed')
    expect(gateOf(res)).toEqual([['send_to_known_addresses', 'recipient_not_known', agent]])
  })

  test('a contact added by hand records no grant: recipient_grant_not_recorded', async () => {
    expectOk(await t.request('POST', '/v1/contacts', { key: replyOnly.key, body: { owner_address: sender, address: agent } }), 201)
    const res = await send(sender, agent)
    expectError(res, 403, 'recipient_not_allowed')
    expect(gateOf(res)).toEqual([['send_to_known_addresses', 'recipient_grant_not_recorded', agent]])
    expect(res.body.error.gates[0].fix).toEqual({ action: 'wait_for_inbound', subject: agent })
  })

  test('network admission records the grant: the first send goes out through the relay, from the admitting address only', async () => {
    const [listed] = expectOk(await t.request('GET', `/v1/networks/${networkId}/agents?skill=calendar`, { key: replyOnly.key }))
    const contact = expectOk(
      await t.request('POST', `/v1/networks/${networkId}/agents/${listed.id}/admit`, { key: replyOnly.key, body: { owner_address: sender } }),
    )
    expect(contact).toMatchObject({ source: 'network', send_grant: 'granted' })
    const before = relay.messages.length
    const res = await send(sender, agent)
    expect(res.status).toBe(200)
    expect(relay.messages.slice(before).map(m => m.to)).toEqual([[agent]])
    // the grant belongs to the address it was admitted under
    const elsewhere = await send(otherSender, agent)
    expectError(elsewhere, 403, 'recipient_not_allowed')
    expect(gateOf(elsewhere)).toEqual([['send_to_known_addresses', 'recipient_not_known', agent]])
  })

  test('once the agent stops accepting contacts the grant is denied: recipient_grant_denied', async () => {
    expectOk(await t.request('PUT', `/v1/published-agents/${agent}`, { key: provider.key, body: { display_name: 'Scheduler', accepts_contacts: false } }))
    const res = await send(sender, agent)
    expectError(res, 403, 'recipient_not_allowed')
    expect(gateOf(res)).toEqual([['send_to_known_addresses', 'recipient_grant_denied', agent]])
  })
})
