/** One organization's mail is not another's. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'

let h: InboundHarness, alice: TestOrg, aliceAddress: string, bob: TestOrg

beforeAll(async () => {
  h = await inboundHarness()
  alice = await createOrg({ plan: 'developer' })
  aliceAddress = await managedAddress(h.ctx, alice.orgId)
  bob = await createOrg({ plan: 'developer' })
  // bob has a mailbox of his own, which alice must never see
  await managedAddress(h.ctx, bob.orgId)
})
afterAll(() => h.stop())

describe('isolation', () => {
  test("another organization's message is 404 everywhere", async () => {
    await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Private', text: 'x' })
    const id = (await h.latest(alice)).id
    expectError(await h.request('GET', `/v1/emails/${id}`, { key: bob.key }), 404, 'not_found')
    expectError(await h.request('GET', `/v1/emails/${id}/raw`, { key: bob.key }), 404, 'not_found')
    expectError(await h.request('GET', `/v1/emails/${id}/attachments.tar.gz`, { key: bob.key }), 404, 'not_found')
    expectError(await h.request('POST', `/v1/emails/${id}/discard`, { key: bob.key }), 404, 'not_found')
    const thread = (await h.email(alice, id)).thread_id
    expectError(await h.request('GET', `/v1/threads/${thread}`, { key: bob.key }), 404, 'not_found')
    const search = await h.request('GET', '/v1/search?q=Private', { key: bob.key })
    expect(search.body.data.every((e: { id: string }) => e.id !== id)).toBe(true)
  })
})
