/**
 * POST /v1/emails/{id}/forward: mail received over SMTP, forwarded through a real SMTP relay,
 * inline or as an attached message/rfc822, its attachments kept and the forward in its thread.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import PostalMime from 'postal-mime'
import { createOrg, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { relayOf } from '../../src/sending/relay'

let relay: TestRelay
let h: InboundHarness
let org: TestOrg
let inbox: string

beforeAll(async () => {
  relay = await startTestRelay()
  h = await inboundHarness({ SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000' })
  org = await createOrg()
  inbox = await managedAddress(h.ctx, org.orgId)
})
afterAll(async () => {
  await relayOf(h.ctx).close()
  await relay.stop()
  await h.stop()
})

const unique = () => crypto.randomUUID().slice(0, 8)

/** A message received over SMTP with one attachment; its stored email. */
async function received(subject: string) {
  await h.transport.sendMail({
    from: 'Sam <sam@sender.example>',
    to: inbox,
    subject,
    text: 'the original text',
    attachments: [{ filename: 'q.txt', content: 'attached question' }],
  })
  return h.email(org, (await h.latest(org)).id)
}

const forward = (id: string, body: Record<string, unknown>, key = org.key) =>
  h.request('POST', `/v1/emails/${id}/forward`, { key, body, headers: { 'idempotency-key': `fwd-${unique()}` } })

/** The last message the relay took, parsed. */
async function relayed(before: number) {
  const [message] = await relay.waitFor(before + 1)
  const last = relay.messages[before]!
  expect(message).toBeDefined()
  return { to: last.to, raw: last.raw, parsed: await PostalMime.parse(last.raw) }
}

describe('POST /v1/emails/{id}/forward', () => {
  test('inline: the note, the original quoted, its attachments kept; stored in the original`s thread', async () => {
    const original = await received(`question ${unique()}`)
    const before = relay.messages.length
    const send = expectOk(await forward(original.id, { from: inbox, to: 'boss@example.com', note: 'FYI, see below' }))
    expect(send).toMatchObject({ status: 'queued', from: inbox, accepted: ['boss@example.com'], thread_id: original.thread_id })
    const { to, parsed } = await relayed(before)
    expect(to).toEqual(['boss@example.com'])
    expect(parsed.subject).toBe(`Fwd: ${original.subject}`)
    expect(parsed.text).toContain('FYI, see below')
    expect(parsed.text).toContain('---------- Forwarded message ----------')
    expect(parsed.text).toContain('From: Sam <sam@sender.example>')
    expect(parsed.text).toContain('the original text')
    expect(parsed.attachments.map(a => [a.filename, Buffer.from(a.content as ArrayBuffer).toString()])).toEqual([['q.txt', 'attached question']])
    expect(original.message_id).toBeString()
    expect(parsed.references).toContain(original.message_id)
    const stored = await h.email(org, (expectOk(await h.request('GET', `/v1/sent-emails/${send.id}`, { key: org.key })) as { email_id: string }).email_id)
    expect(stored.thread_id).toBe(original.thread_id)
  })

  test('attachment: the note, and the original whole as message/rfc822 with its own attachment', async () => {
    const original = await received(`report ${unique()}`)
    const before = relay.messages.length
    const send = expectOk(await forward(original.id, { from: inbox, to: ['boss@example.com', 'ops@example.com'], note: 'attached', mode: 'attachment' }))
    expect(send.thread_id).toBe(original.thread_id)
    const { parsed } = await relayed(before)
    expect(parsed.subject).toBe(`Fwd: ${original.subject}`)
    expect(parsed.text?.trim()).toBe('attached')
    expect(parsed.attachments.map(a => [a.filename, a.mimeType])).toEqual([[`${original.subject}.eml`, 'message/rfc822']])
    const inner = await PostalMime.parse(parsed.attachments[0]!.content as ArrayBuffer)
    expect(inner.subject).toBe(original.subject)
    expect(inner.from?.address).toBe('sam@sender.example')
    expect(inner.text?.trim()).toBe('the original text')
    expect(inner.attachments.map(a => [a.filename, Buffer.from(a.content as ArrayBuffer).toString()])).toEqual([['q.txt', 'attached question']])
  })

  test('refusals: bad fields, another organization`s email, a connection key forwarding mail of another address', async () => {
    const original = await received(`private ${unique()}`)
    expectError(await forward(original.id, { from: inbox, to: 'boss@example.com', mode: 'pigeon' }), 400, 'validation_error', /^mode: /)
    expectError(await forward(original.id, { from: inbox }), 400, 'validation_error', /^to: is required/)
    expectError(await forward(original.id, { from: 'someone@not-ours.example', to: 'boss@example.com' }), 403, 'cannot_send_from_domain')
    const stranger = await createOrg()
    const theirs = await managedAddress(h.ctx, stranger.orgId)
    expectError(await forward(original.id, { from: theirs, to: 'boss@example.com' }, stranger.key), 404, 'not_found')
    const other = await managedAddress(h.ctx, org.orgId)
    const inv = expectOk(await h.request('POST', '/v1/agent-connections', { key: org.key, body: { address: other } }), 201)
    const conn = expectOk(await h.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    expectError(await forward(original.id, { from: other, to: 'boss@example.com' }, conn), 404, 'not_found')
  })
})
