/** GET /v1/emails?wait= wakes when mail is stored, here or in another process. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'

let h: InboundHarness

beforeAll(async () => {
  h = await inboundHarness()
})
afterAll(() => h.stop())

describe('long-poll', () => {
  test('GET /v1/emails?wait= returns as soon as mail arrives', async () => {
    const carol = await createOrg()
    const address = await managedAddress(h.ctx, carol.orgId)
    const since = new Date().toISOString()
    const poll = h.request('GET', `/v1/emails?wait=30&since=${encodeURIComponent(since)}`, { key: carol.key })
    await Bun.sleep(100)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Wake up', text: 'now' })
    const res = await poll
    expect(res.status).toBe(200)
    expect(res.body.data.map((e: { subject: string }) => e.subject)).toEqual(['Wake up'])
  })

  test('wait=0 and an empty result returns at once; wait above the maximum is refused', async () => {
    const dave = await createOrg()
    const empty = await h.request('GET', '/v1/emails?wait=0', { key: dave.key })
    expect(empty.body).toMatchObject({ success: true, data: [], meta: { total: 0, cursor: null } })
    expectError(await h.request('GET', '/v1/emails?wait=61', { key: dave.key }), 400, 'validation_error', /^wait: /)
  })
})
