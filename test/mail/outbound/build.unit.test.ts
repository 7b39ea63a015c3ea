/** buildMime edge cases: shapes, encodings, and header injection. */
import { describe, expect, test } from 'bun:test'
import PostalMime from 'postal-mime'
import { buildMime, type OutboundMessage } from '../../../src/mail/outbound/build'
import { fullMessage, headerFields } from './message'

const minimal = (overrides: Partial<OutboundMessage> = {}): OutboundMessage => ({
  from: { address: 'bot@example.com' },
  to: ['alice@example.com'],
  cc: [],
  bcc: [],
  subject: 'Hello',
  text: 'Hi there.',
  messageId: '<m1@example.com>',
  date: new Date('2025-01-02T03:04:05Z'),
  ...overrides,
})

const parse = (raw: string) => new PostalMime().parse(raw)
const crlfOnly = (raw: string) => !/(?<!\r)\n|\r(?!\n)/.test(raw)

describe('shape', () => {
  test('a plain text message is a single 7bit text/plain part', async () => {
    const raw = buildMime(minimal())
    expect(crlfOnly(raw)).toBe(true)
    const fields = headerFields(raw)
    expect(fields.find(f => f.name === 'content-type')?.value).toBe('text/plain; charset=UTF-8')
    expect(fields.find(f => f.name === 'content-transfer-encoding')?.value).toBe('7bit')
    expect(fields.find(f => f.name === 'from')?.value).toBe('bot@example.com')
    expect(fields.some(f => f.name === 'cc' || f.name === 'reply-to' || f.name === 'in-reply-to')).toBe(false)
    expect((await parse(raw)).text?.trim()).toBe('Hi there.')
  })

  test('non-ASCII text goes quoted-printable and comes back intact; CR, LF and CRLF all become CRLF', async () => {
    const text = 'Grüße\r\nzweite Zeile\rdritte\n' + 'ä'.repeat(300)
    const raw = buildMime(minimal({ text }))
    expect(raw).toContain('Content-Transfer-Encoding: quoted-printable')
    expect(crlfOnly(raw)).toBe(true)
    expect(Math.max(...raw.split('\r\n').map(l => l.length))).toBeLessThanOrEqual(78)
    expect((await parse(raw)).text?.trim()).toBe('Grüße\nzweite Zeile\ndritte\n' + 'ä'.repeat(300))
  })

  test('the full message has no Bcc and CRLF only', () => {
    const raw = buildMime(fullMessage('bot@example.com'))
    expect(crlfOnly(raw)).toBe(true)
    expect(raw).not.toMatch(/^bcc:/im)
    expect(raw).not.toContain('hidden@example.com')
  })

  test('a long subject is folded and decodes to the original', async () => {
    const subject = 'A subject that keeps going '.repeat(12).trim()
    const raw = buildMime(minimal({ subject }))
    const head = raw.slice(0, raw.indexOf('\r\n\r\n'))
    expect(Math.max(...head.split('\r\n').map(l => l.length))).toBeLessThanOrEqual(78)
    expect((await parse(raw)).subject).toBe(subject)
  })

  test('a subject that looks like an encoded word is encoded, not interpreted', async () => {
    const subject = '=?UTF-8?B?aGFja2Vk?= literally'
    expect((await parse(buildMime(minimal({ subject })))).subject).toBe(subject)
  })

  test('attachment names: non-ASCII, very long, and ones that fool mimetext ("inline.pdf")', async () => {
    const data = Buffer.alloc(5000, 1).toString('base64') // one line far past 998 characters
    const names = ['Résumé – final.pdf', `${'long-name-'.repeat(20)}.txt`, 'inline.pdf', 'quote"and\\backslash.txt']
    const raw = buildMime(minimal({ attachments: names.map(filename => ({ filename, content_type: 'application/octet-stream', content_base64: data })) }))
    expect(Math.max(...raw.split('\r\n').map(l => l.length))).toBeLessThanOrEqual(998)
    const parsed = await parse(raw)
    expect(parsed.attachments.map(a => a.filename)).toEqual(names)
    expect(parsed.attachments.every(a => a.disposition === 'attachment' && (a.content as ArrayBuffer).byteLength === 5000)).toBe(true)
  })

  test('display names: quoted when ASCII, encoded when not', async () => {
    const ascii = buildMime(minimal({ from: { address: 'bot@example.com', name: 'Bot, "the" Agent' } }))
    expect(headerFields(ascii).find(f => f.name === 'from')?.value).toBe('"Bot, \\"the\\" Agent" <bot@example.com>')
    expect((await parse(ascii)).from).toEqual({ address: 'bot@example.com', name: 'Bot, "the" Agent' })
    const utf8 = buildMime(minimal({ from: { address: 'bot@example.com', name: 'Agent Ünïcode 🤖' } }))
    expect((await parse(utf8)).from).toEqual({ address: 'bot@example.com', name: 'Agent Ünïcode 🤖' })
  })

  test('many recipients and references are folded', () => {
    const to = Array.from({ length: 30 }, (_, i) => `person${i}@example.com`)
    const references = Array.from({ length: 30 }, (_, i) => `<ref-${i}-${'x'.repeat(20)}@example.com>`)
    const raw = buildMime(minimal({ to, references }))
    const head = raw.slice(0, raw.indexOf('\r\n\r\n'))
    expect(Math.max(...head.split('\r\n').map(l => l.length))).toBeLessThanOrEqual(78)
    expect(headerFields(raw).find(f => f.name === 'references')?.value).toBe(references.join(' '))
  })
})

describe('header injection and misuse', () => {
  test('line breaks in any header value are refused', () => {
    expect(() => buildMime(minimal({ subject: 'Hi\r\nBcc: victim@example.com' }))).toThrow(/line breaks/)
    expect(() => buildMime(minimal({ from: { address: 'bot@example.com', name: 'x\nBcc: y@example.com' } }))).toThrow(/line breaks/)
    expect(() => buildMime(minimal({ headers: { 'X-Test': 'a\nb' } }))).toThrow(/line breaks/)
    expect(() => buildMime(minimal({ to: ['a@example.com\r\nBcc: b@example.com'] }))).toThrow()
    expect(() => buildMime(minimal({ attachments: [{ filename: 'a\r\n.txt', content_type: 'text/plain', content_base64: '' }] }))).toThrow(/line breaks/)
  })

  test('custom headers cannot replace the ones the builder writes', () => {
    for (const name of ['Bcc', 'From', 'content-type', 'DKIM-Signature', 'Message-ID']) {
      expect(() => buildMime(minimal({ headers: { [name]: 'x' } }))).toThrow(/set by the message builder/)
    }
    expect(() => buildMime(minimal({ headers: { 'Bad Name': 'x' } }))).toThrow(/not a header field name/)
  })

  test('a malformed message id or content type is refused', () => {
    expect(() => buildMime(minimal({ messageId: 'no-brackets@example.com' }))).toThrow(/message id/)
    expect(() => buildMime(minimal({ attachments: [{ filename: 'a.txt', content_type: 'text/plain\r\nX: y', content_base64: '' }] }))).toThrow()
  })
})
