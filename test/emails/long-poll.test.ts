/** GET /v1/emails?wait= wakes when mail is stored, here or in another process. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { until } from '../helpers/until'
import { mailEvents } from '../../src/events'
import { createManagedInbox } from '../../src/inboxes/service'
import type { AppContext } from '../../src/context'

const managedInbox = (ctx: AppContext, orgId: string) => ctx.sql.begin(tx => createManagedInbox(tx, orgId, ctx.config.MANAGED_DOMAIN))

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

  test('a wake that finds nothing (a repeated signal, as a late NOTIFY of mail already read) waits on for the mail that comes', async () => {
    const erin = await createOrg()
    const address = await managedAddress(h.ctx, erin.orgId)
    const since = new Date().toISOString()
    const events = mailEvents(h.ctx)
    const before = events.waiting
    const poll = h.request('GET', `/v1/emails?wait=30&since=${encodeURIComponent(since)}`, { key: erin.key })
    await until(
      async () => events.waiting,
      n => n > before,
    )
    events.emit(erin.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'After the echo', text: 'now' })
    const res = await poll
    expect(res.status).toBe(200)
    expect(res.body.data.map((e: { subject: string }) => e.subject)).toEqual(['After the echo'])
  })

  test('a long-poll of one inbox is answered by its own mail, not by mail to another inbox of the organization', async () => {
    const fay = await createOrg()
    const [mine, other] = [await managedInbox(h.ctx, fay.orgId), await managedInbox(h.ctx, fay.orgId)]
    const since = new Date().toISOString()
    const events = mailEvents(h.ctx)
    const before = events.waiting
    const poll = h.request('GET', `/v1/emails?wait=30&inbox_id=${mine.id}&since=${encodeURIComponent(since)}`, { key: fay.key })
    await until(
      async () => events.waiting,
      n => n > before,
    )
    await h.transport.sendMail({ from: 'sam@sender.example', to: other.address, subject: 'Not yours', text: 'x' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: mine.address, subject: 'Yours', text: 'x' })
    const res = await poll
    expect(res.status).toBe(200)
    expect(res.body.data.map((e: { subject: string }) => e.subject)).toEqual(['Yours'])
  })

  test('wait=0 and an empty result returns at once; wait above the maximum is refused', async () => {
    const dave = await createOrg()
    const empty = await h.request('GET', '/v1/emails?wait=0', { key: dave.key })
    expect(empty.body).toMatchObject({ success: true, data: [], meta: { total: 0, cursor: null } })
    expectError(await h.request('GET', '/v1/emails?wait=61', { key: dave.key }), 400, 'validation_error', /^wait: /)
  })
})
