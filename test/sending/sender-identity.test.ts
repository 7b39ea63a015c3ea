/**
 * Mail sent as an inbox: its From shows the inbox's display name (RFC 2047 encoded when it is
 * not plain ASCII), read back with postal-mime, a parser we did not write; and the sender's copy
 * is listed as email.sent, or email.replied when it answers received mail.
 */
import { describe, expect, test } from 'bun:test'
import PostalMime from 'postal-mime'
import { memoryResolver } from '../../src/dns/resolver'
import { createOrg, testApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'

const { request } = await testApp({}, { resolver: memoryResolver({}) })
const unique = () => crypto.randomUUID().slice(0, 8)

async function inbox(org: TestOrg, displayName?: string): Promise<string> {
  const body = displayName === undefined ? {} : { display_name: displayName }
  return expectOk(await request('POST', '/v1/inboxes', { key: org.key, body }), 201).address
}

/** Sends as `from` to an outside address and returns the message as the local outbox kept it. */
async function sendAndRead(org: TestOrg, body: Record<string, unknown>) {
  const subject = `hello ${unique()}`
  const sent = expectOk(await request('POST', '/v1/send-mail', { key: org.key, body: { to: 'alice@example.com', subject, body_text: 'hi', ...body } }))
  const list = expectOk(await request('GET', '/v1/outbound/outbox', { key: org.key })) as { id: string; subject: string }[]
  const item = list.find(i => i.subject === subject)!
  const raw: string = expectOk(await request('GET', `/v1/outbound/outbox/${item.id}`, { key: org.key })).raw
  const fromHeader = /^From:(.*(?:\r\n[ \t].*)*)/m.exec(raw)![1]!
  return { sent, raw, fromHeader, parsed: await PostalMime.parse(raw) }
}

describe('From of mail sent as an inbox', () => {
  test("a non-ASCII display name is RFC 2047 encoded and decodes to the inbox's name", async () => {
    const org = await createOrg()
    const name = 'Zoë the Agent 🤖, "Support" (Ünïcode desk) and a name long enough to need folding'
    const from = await inbox(org, name)
    const { fromHeader, parsed } = await sendAndRead(org, { from })
    expect(fromHeader).toContain('=?UTF-8?')
    expect(fromHeader).not.toContain('Zoë')
    expect(parsed.from).toEqual({ name, address: from })
  })

  test('a plain ASCII display name, with characters that need quoting', async () => {
    const org = await createOrg()
    const from = await inbox(org, 'Billing, Inc. "Desk"')
    const { parsed } = await sendAndRead(org, { from })
    expect(parsed.from).toEqual({ name: 'Billing, Inc. "Desk"', address: from })
  })

  test('from_name in the request wins over the display name; an inbox without one sends the bare address', async () => {
    const org = await createOrg()
    const named = await inbox(org, 'Inbox Name')
    expect((await sendAndRead(org, { from: named, from_name: 'Request Name' })).parsed.from).toEqual({ name: 'Request Name', address: named })
    const bare = await inbox(org)
    const { parsed } = await sendAndRead(org, { from: bare })
    expect(parsed.from?.address).toBe(bare)
    expect(parsed.from?.name ?? '').toBe('')
  })
})

describe("the sender's copy in GET /v1/emails", () => {
  test('is email.sent, a reply to received mail email.replied, and each filters by its type', async () => {
    const org = await createOrg()
    const from = await inbox(org, 'Agent')
    await sendAndRead(org, { from })
    // the organization receives an answer (delivered to itself through the local relay)
    const other = await createOrg()
    const outsider = await inbox(other, 'Outsider')
    expectOk(await request('POST', '/v1/send-mail', { key: other.key, body: { from: outsider, to: from, subject: 'a question', body_text: '?' } }))
    const received = expectOk(await request('GET', '/v1/emails?direction=inbound', { key: org.key }))[0]
    expect(received.event_type).toBe('email.received')
    const reply = expectOk(
      await request('POST', '/v1/send-mail', { key: org.key, body: { from, in_reply_to_email_id: received.id, subject: 'Re: a question', body_text: '!' } }),
    )

    const outbound = expectOk(await request('GET', '/v1/emails?direction=outbound', { key: org.key })) as {
      thread_id: string
      event_type: string
      subject: string
    }[]
    expect(outbound.map(e => [e.subject, e.event_type])).toEqual([
      ['Re: a question', 'email.replied'],
      [expect.stringMatching(/^hello /), 'email.sent'],
    ])
    expect(outbound[0]!.thread_id).toBe(reply.thread_id)
    const sentOnly = expectOk(await request('GET', '/v1/emails?event_type=email.sent', { key: org.key }))
    expect(sentOnly.map((e: { event_type: string }) => e.event_type)).toEqual(['email.sent'])
    const replied = expectOk(await request('GET', '/v1/emails?event_type=email.replied', { key: org.key }))
    expect(replied).toHaveLength(1)
    // the recipient's copy of mail between two organizations stays email.received
    expect(expectOk(await request('GET', '/v1/emails?direction=inbound', { key: other.key }))[0].event_type).toBe('email.received')
  })
})
