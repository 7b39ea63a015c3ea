/** Discarding the content of a stored email. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'

let h: InboundHarness

beforeAll(async () => {
  h = await inboundHarness()
})
afterAll(() => h.stop())

describe('content discard', () => {
  test('needs the opt-in, then removes content irreversibly and frees storage', async () => {
    const ivy = await createOrg()
    const address = await managedAddress(h.ctx, ivy.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Secret', text: 'classified' })
    const id = (await h.latest(ivy)).id
    expectError(await h.request('POST', `/v1/emails/${id}/discard`, { key: ivy.key }), 403, 'discard_not_enabled')
    const sql = await testSql()
    const { contentDiscardCommand } = await import('../../src/admin/commands')
    await expect(contentDiscardCommand(sql, ivy.orgId, 'maybe')).rejects.toThrow('on or off')
    expect(await contentDiscardCommand(sql, ivy.orgId, 'on')).toEqual({ org_id: ivy.orgId, content_discard_enabled: true })
    const res = await h.request('POST', `/v1/emails/${id}/discard`, { key: ivy.key })
    expect(res.status).toBe(200)
    const email = await h.email(ivy, id)
    expect(email).toMatchObject({ subject: 'Secret', text: null, html: null, attachments: [], content_discarded: true })
    expectError(await h.request('GET', `/v1/emails/${id}/raw`, { key: ivy.key }), 404, 'not_found')
    expect((await h.request('GET', '/v1/account/storage', { key: ivy.key })).body.data.used_bytes).toBe(0)
  })
})
