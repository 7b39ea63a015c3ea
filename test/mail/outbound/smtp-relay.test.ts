/**
 * The SMTP relay against real peers: nodemailer's smtp-server on loopback (what it received,
 * byte for byte), STARTTLS, implicit TLS, AUTH, and each failure the error table names.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import PostalMime from 'postal-mime'
import { memoryResolver } from '../../../src/dns/resolver'
import { generateDkimKey } from '../../../src/domains/service'
import { buildMime } from '../../../src/mail/outbound/build'
import { dkimSign, signingKeyFor } from '../../../src/mail/outbound/dkim'
import { managedDkimRecord } from '../../../src/mail/outbound/managed-key'
import { createRelay, RelayError } from '../../../src/mail/outbound/relay'
import { createSmtpRelay, type SmtpRelayOptions } from '../../../src/mail/outbound/smtp-relay'
import type { Relay } from '../../../src/mail/outbound/relay-types'
import { createOrg, testApp } from '../../helpers/app'
import { fullMessage, headerFields, verifyDkim } from './message'
import { closedPort, HANG_UP, smtpDialogue, startRelayPeer, startScriptedPeer, tlsCert, type RelayPeer } from './peers'

const { ctx } = await testApp({}, { resolver: memoryResolver({}) })
const org = await createOrg()
const managed = ctx.config.MANAGED_DOMAIN
const sender = `agent@${managed}`

const cleanup: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn()
})

function relayTo(url: string, extra: Partial<SmtpRelayOptions> = {}): Relay {
  const relay = createSmtpRelay({ url, timeoutMs: 2_000, clientName: 'out.test.local', tls: { ca: tlsCert }, ...extra })
  cleanup.push(() => relay.close())
  return relay
}

async function peer(opts: Parameters<typeof startRelayPeer>[0] = {}): Promise<RelayPeer> {
  const p = await startRelayPeer(opts)
  cleanup.push(() => p.stop())
  return p
}

async function signedMessage(overrides = {}) {
  const m = fullMessage(sender, overrides)
  const key = await signingKeyFor(ctx, org.orgId, managed)
  return { m, raw: await dkimSign(buildMime(m), key!) }
}

const envelopeOf = (m: ReturnType<typeof fullMessage>) => ({ from: `bounce@${managed}`, to: [...m.to, ...m.cc, ...m.bcc] })

/** What the relay failed with. */
async function failure(p: Promise<unknown>): Promise<RelayError> {
  const error = await p.then(
    () => null,
    e => e,
  )
  expect(error).toBeInstanceOf(RelayError)
  return error as RelayError
}

describe('a message through the SMTP relay', async () => {
  const relayPeer = await peer()
  const { m, raw } = await signedMessage()
  const relay = relayTo(relayPeer.url)
  const result = await relay.send(envelopeOf(m), raw)
  const got = relayPeer.received[0]!
  const fields = headerFields(got.raw)
  const header = (name: string) => fields.filter(f => f.name === name).map(f => f.value)
  const parsed = await new PostalMime().parse(got.raw)

  test('every recipient accepted; the envelope carries Bcc', () => {
    expect(result.accepted.sort()).toEqual([...m.to, ...m.cc, ...m.bcc].sort())
    expect(result.rejected).toEqual([])
    expect(result.response).toStartWith('250')
    expect(got.mailFrom).toBe(`bounce@${managed}`)
    expect(got.rcptTo).toContain('hidden@example.com')
  })

  test('the bytes received are exactly the bytes sent', () => {
    expect(got.raw).toBe(raw)
  })

  test('From with its name, To, Cc, Reply-To; no Bcc anywhere in the message', () => {
    expect(header('from')).toEqual([`"Support Agent" <${sender}>`])
    expect(header('to')).toEqual(['alice@example.com, bob@example.net'])
    expect(header('cc')).toEqual(['carol@example.org'])
    expect(header('reply-to')).toEqual(['replies@example.com'])
    expect(header('bcc')).toEqual([])
    expect(got.raw).not.toContain('hidden@example.com')
    expect(parsed.from).toEqual({ address: sender, name: 'Support Agent' })
  })

  test('a non-ASCII Subject is RFC 2047-encoded and decodes to the original', () => {
    expect(header('subject')[0]).toMatch(/^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=( =\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=)*$/)
    expect(parsed.subject).toBe(m.subject)
  })

  test('Message-ID, Date, In-Reply-To, References, custom headers', () => {
    expect(header('message-id')).toEqual([m.messageId])
    expect(header('date')).toEqual(['Tue, 01 Jul 2025 09:30:00 +0000'])
    expect(header('in-reply-to')).toEqual(['<parent@example.com>'])
    expect(header('references')).toEqual(['<root@example.com> <parent@example.com>'])
    expect(header('x-campaign')).toEqual(['spring'])
    expect(header('mime-version')).toEqual(['1.0'])
  })

  test('MIME: text and html as alternatives, the inline image related, attachments and the JSON part mixed', () => {
    expect(header('content-type')[0]).toStartWith('multipart/mixed; boundary=')
    expect(got.raw).toContain('Content-Type: multipart/alternative; boundary=')
    expect(got.raw).toContain('Content-Type: multipart/related; boundary=')
    expect(parsed.text?.trim()).toBe(m.text.trim())
    expect(parsed.html).toContain('<b>on its way</b>')
    const parts = parsed.attachments.map(a => ({ filename: a.filename, type: a.mimeType, disposition: a.disposition, cid: a.contentId ?? null }))
    expect(parts).toEqual([
      { filename: 'logo.png', type: 'image/png', disposition: 'inline', cid: '<logo@x>' },
      { filename: 'invoice.pdf', type: 'application/pdf', disposition: 'attachment', cid: null },
      { filename: 'interaction.json', type: 'application/json', disposition: 'attachment', cid: null },
    ])
    const json = parsed.attachments.find(a => a.filename === 'interaction.json')!
    expect(JSON.parse(new TextDecoder().decode(json.content as ArrayBuffer))).toEqual({ type: 'repeat.tick/1', tick: 1 })
    const pdf = parsed.attachments.find(a => a.filename === 'invoice.pdf')!
    expect(new TextDecoder().decode(pdf.content as ArrayBuffer)).toBe('%PDF-1.4 fake')
  })

  test('CRLF line endings only; no line over 998 characters', () => {
    expect(got.raw).not.toMatch(/(?<!\r)\n/)
    expect(got.raw).not.toMatch(/\r(?!\n)/)
    expect(Math.max(...got.raw.split('\r\n').map(l => l.length))).toBeLessThanOrEqual(998)
  })

  test("mailauth verifies the DKIM signature with the managed domain's published key", async () => {
    const record = await managedDkimRecord(ctx.sql, ctx.keys, managed)
    const [dkim] = await verifyDkim(got.raw, { [record.name]: record.value })
    expect(dkim?.status.result).toBe('pass')
    expect(dkim?.signingDomain).toBe(managed)
    const signed = dkim!.signingHeaders!.keys.split(':').map(k => k.trim().toLowerCase())
    for (const h of ['from', 'to', 'cc', 'subject', 'date', 'message-id', 'reply-to', 'in-reply-to', 'references', 'content-type', 'mime-version']) {
      expect(signed).toContain(h)
    }
  })

  test('with another key published, it does not pass', async () => {
    const record = await managedDkimRecord(ctx.sql, ctx.keys, managed)
    const other = await generateDkimKey()
    const [dkim] = await verifyDkim(got.raw, { [record.name]: `v=DKIM1; k=rsa; p=${other.publicKey}` })
    expect(dkim?.status.result).not.toBe('pass')
  })
})

describe('transport security and authentication', () => {
  test('STARTTLS is used when the relay offers it', async () => {
    const p = await peer({ starttls: true })
    const { m, raw } = await signedMessage()
    await relayTo(p.url).send(envelopeOf(m), raw)
    expect(p.received[0]?.secure).toBe(true)
  })

  test('smtps:// speaks TLS from the first byte', async () => {
    const p = await peer({ implicitTls: true })
    expect(p.url).toStartWith('smtps://')
    const { m, raw } = await signedMessage()
    await relayTo(p.url).send(envelopeOf(m), raw)
    expect(p.received[0]?.secure).toBe(true)
  })

  test('a relay certificate we do not trust fails the send without sending', async () => {
    const p = await peer({ starttls: true })
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(p.url, { tls: {} }).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_relay_failed')
    expect(e.maybeSent).toBe(false)
    expect(p.received).toHaveLength(0)
  })

  test('AUTH with the credentials of SMTP_RELAY_URL', async () => {
    const p = await peer({ starttls: true, credentials: { user: 'relay-user', pass: 'p@ss:word/1' } })
    const { m, raw } = await signedMessage()
    await relayTo(p.url).send(envelopeOf(m), raw)
    expect(p.received[0]?.user).toBe('relay-user')
  })

  test('a wrong password is outbound_key_invalid; nothing sent', async () => {
    const p = await peer({ starttls: true, credentials: { user: 'relay-user', pass: 'right' } })
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(p.url.replace(':right@', ':wrong@')).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_key_invalid')
    expect(e.maybeSent).toBe(false)
    expect(p.received).toHaveLength(0)
  })

  test('no credentials where the relay requires them is outbound_key_invalid', async () => {
    const p = await peer({ starttls: true, credentials: { user: 'relay-user', pass: 'right' } })
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(p.url.replace('relay-user:right@', '')).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_key_invalid')
  })
})

describe('failures', () => {
  test('relay down (closed port): outbound_unreachable, nothing sent', async () => {
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(await closedPort()).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_unreachable')
    expect(e.maybeSent).toBe(false)
  })

  test('a relay that accepts the connection but never greets: outbound_unreachable', async () => {
    const silent = await startScriptedPeer({ greeting: null, answer: () => null })
    cleanup.push(() => silent.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(silent.url, { timeoutMs: 1_500 }).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_unreachable')
    expect(e.maybeSent).toBe(false)
  })

  test('a relay that never answers after DATA: outbound_relay_timeout, maybe sent', async () => {
    const p = await peer({ data: 'hang' })
    const { m, raw } = await signedMessage()
    const started = Date.now()
    const e = await failure(relayTo(p.url, { timeoutMs: 1_500 }).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_relay_timeout')
    expect(e.maybeSent).toBe(true)
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  test('a relay that stops answering before DATA: outbound_relay_timeout, nothing sent', async () => {
    const stuck = await startScriptedPeer({ greeting: '220 stuck.test\r\n', answer: line => (/^(EHLO|HELO)/i.test(line) ? '250 stuck.test\r\n' : null) })
    cleanup.push(() => stuck.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(stuck.url, { timeoutMs: 1_500 }).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_relay_timeout')
    expect(e.maybeSent).toBe(false)
  })

  test('452 at RCPT for every recipient: outbound_capacity_exhausted', async () => {
    const p = await peer({ rcpt: () => ({ code: 452, message: '4.5.3 Too many recipients, slow down' }) })
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(p.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_capacity_exhausted')
    expect(e.maybeSent).toBe(false)
  })

  test('550 for one of two recipients: sent to the other, the refused one in result.rejected', async () => {
    const p = await peer({ rcpt: a => (a === 'bob@example.net' ? { code: 550, message: '5.1.1 No such user' } : undefined) })
    const { m, raw } = await signedMessage({ cc: [], bcc: [] })
    const result = await relayTo(p.url).send({ from: `bounce@${managed}`, to: ['alice@example.com', 'bob@example.net'] }, raw)
    expect(result.accepted).toEqual(['alice@example.com'])
    expect(result.rejected).toEqual(['bob@example.net'])
    expect(p.received[0]?.rcptTo).toEqual(['alice@example.com'])
    expect(m.to).toHaveLength(2)
  })

  test('550 for every recipient: outbound_relay_failed, and the connection is reused afterwards', async () => {
    let refuse = true
    const p = await peer({ rcpt: () => (refuse ? { code: 550, message: '5.1.1 No such user' } : undefined) })
    // one connection: the next send waits until the refused session is RSET and back in the pool
    const relay = relayTo(p.url, { maxConnections: 1 })
    const { m, raw } = await signedMessage()
    const e = await failure(relay.send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_relay_failed')
    expect(e.maybeSent).toBe(false)
    refuse = false
    await relay.send(envelopeOf(m), raw)
    expect(p.received).toHaveLength(1)
    expect(p.connections).toBe(1)
  })

  test('a refusal of the message after DATA is outbound_relay_failed, not maybe sent', async () => {
    const p = await peer({ data: { code: 554, message: '5.7.1 Message rejected as spam' } })
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(p.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_relay_failed')
    expect(e.maybeSent).toBe(false)
  })

  test('a 421 busy greeting: outbound_capacity_exhausted', async () => {
    const busy = await startScriptedPeer({ greeting: '421 4.3.2 Too busy, try later\r\n', answer: () => null })
    cleanup.push(() => busy.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(busy.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_capacity_exhausted')
  })

  test('a server that answers garbage: outbound_response_malformed, nothing sent', async () => {
    const garbage = await startScriptedPeer({ greeting: 'HTTP/1.1 400 Bad Request\r\n', answer: () => 'what?\r\n' })
    cleanup.push(() => garbage.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(garbage.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_response_malformed')
    expect(e.maybeSent).toBe(false)
  })

  test('garbage in answer to the message data: outbound_response_malformed, maybe sent', async () => {
    const garbage = await startScriptedPeer({ greeting: '220 scripted.test\r\n', answer: smtpDialogue('OK THANKS\r\n') })
    cleanup.push(() => garbage.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(garbage.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_response_malformed')
    expect(e.maybeSent).toBe(true)
  })

  test('a 3xx answer to the end of data is no SMTP sense either: outbound_response_malformed, maybe sent', async () => {
    const odd = await startScriptedPeer({ greeting: '220 scripted.test\r\n', answer: smtpDialogue('354 go ahead again\r\n') })
    cleanup.push(() => odd.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(odd.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_response_malformed')
    expect(e.maybeSent).toBe(true)
  })
})

describe('the connection pool', () => {
  test('messages share connections', async () => {
    const p = await peer()
    const relay = relayTo(p.url, { maxConnections: 2 })
    const { m, raw } = await signedMessage()
    await Promise.all(Array.from({ length: 6 }, () => relay.send(envelopeOf(m), raw)))
    expect(p.received).toHaveLength(6)
    expect(p.connections).toBeLessThanOrEqual(2)
  })

  test('a kept connection the relay dropped without a word is replaced, and the send goes through', async () => {
    // the first connection carries one message, then hangs up on the next MAIL FROM; later connections behave
    const flaky = await startScriptedPeer({
      greeting: '220 flaky.test\r\n',
      answer: (line, state) => (state.connection === 1 && state.messages === 1 && /^MAIL/i.test(line) ? HANG_UP : smtpDialogue('250 2.0.0 queued\r\n')(line)),
    })
    cleanup.push(() => flaky.stop())
    const relay = relayTo(flaky.url)
    const { m, raw } = await signedMessage()
    await relay.send(envelopeOf(m), raw)
    const second = await relay.send(envelopeOf(m), raw)
    expect(second.response).toStartWith('250')
  })

  test('a connection dropped on its first message is not retried: outbound_unreachable', async () => {
    const rude = await startScriptedPeer({ greeting: '220 rude.test\r\n', answer: line => (/^MAIL/i.test(line) ? HANG_UP : smtpDialogue(null)(line)) })
    cleanup.push(() => rude.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(rude.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_unreachable')
    expect(e.maybeSent).toBe(false)
  })

  test('a connection dropped after the message data: outbound_relay_timeout, maybe sent', async () => {
    const cut = await startScriptedPeer({ greeting: '220 cut.test\r\n', answer: line => (line === '.' ? HANG_UP : smtpDialogue(null)(line)) })
    cleanup.push(() => cut.stop())
    const { m, raw } = await signedMessage()
    const e = await failure(relayTo(cut.url).send(envelopeOf(m), raw))
    expect(e.code).toBe('outbound_relay_timeout')
    expect(e.maybeSent).toBe(true)
  })
})

describe('createRelay', () => {
  test('SMTP_RELAY_URL chooses the SMTP relay; unset, the local one', async () => {
    const p = await peer()
    const withUrl = await testApp({ SMTP_RELAY_URL: p.url, RELAY_TIMEOUT_MS: '2000' }, { resolver: memoryResolver({}) })
    const smtp = createRelay(withUrl.ctx)
    cleanup.push(() => smtp.close())
    expect(smtp.kind).toBe('smtp')
    const { m, raw } = await signedMessage()
    await smtp.send(envelopeOf(m), raw)
    expect(p.received).toHaveLength(1)
    expect(createRelay(ctx).kind).toBe('local')
  })
})
