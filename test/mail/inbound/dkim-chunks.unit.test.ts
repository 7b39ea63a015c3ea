/**
 * mailauth's DKIM verifier as we run it (patches/mailauth@7.1.0.patch replaces its
 * byte-by-byte scans for the end of the header section and for bare LFs with indexOf): its
 * message parser splits headers from body and turns bare LFs into CRLF exactly, whichever way
 * the bytes are cut into chunks; messages signed by nodemailer's DKIM signer, an implementation
 * independent of mailauth's, verify in any chunking, and a changed body does not.
 */
import { describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { Readable } from 'node:stream'
import nodemailer from 'nodemailer'
import { MessageParser } from 'mailauth/lib/dkim/message-parser'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { memoryResolver } from '../../../src/dns/resolver'

const DOMAIN = 'signer.example'
const SELECTOR = 'chunks'
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
const resolver = memoryResolver({
  [`${SELECTOR}._domainkey.${DOMAIN}`]: { TXT: [[`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]] },
})

/** The message as nodemailer sends it, DKIM-signed (relaxed/relaxed), with the given line ending. */
async function signed(raw: string, newline: 'windows' | 'unix'): Promise<Buffer> {
  const transport = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    newline,
    dkim: { domainName: DOMAIN, keySelector: SELECTOR, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string },
  })
  const info = await transport.sendMail({ envelope: { from: `a@${DOMAIN}`, to: 'b@example.com' }, raw })
  return info.message as Buffer
}

/** The DKIM results of `message` fed to the verifier `size` bytes at a time. */
async function verifyInChunks(message: Buffer, size: number): Promise<string[]> {
  const chunks: Buffer[] = []
  for (let at = 0; at < message.length; at += size) chunks.push(message.subarray(at, at + size))
  const result = await dkimVerify(Readable.from(chunks), { resolver: resolver as never })
  return (result.results as { status: { result: string } }[]).map(r => r.status.result)
}

const MESSAGES = {
  'a body of several lines': `From: a@${DOMAIN}\r\nTo: b@example.com\r\nSubject: chunks\r\n\r\nfirst line\r\n\r\n  indented, trailing space \r\nlast line\r\n`,
  'an empty body': `From: a@${DOMAIN}\r\nTo: b@example.com\r\nSubject: empty\r\n\r\n`,
  'a body of blank lines': `From: a@${DOMAIN}\r\nSubject: blank\r\n\r\n\r\n\r\n\r\n`,
  'folded headers and a body that looks like headers': `From: a@${DOMAIN}\r\nSubject: a long\r\n subject, folded\r\n\r\nX-Not-A-Header: body\r\n\r\nend\r\n`,
}
const SIZES = [1, 2, 3, 5, 7, 16, 64, 1 << 20]

describe('DKIM verification across chunk boundaries', () => {
  for (const [name, raw] of Object.entries(MESSAGES)) {
    for (const newline of ['windows', 'unix'] as const) {
      test(`${name}, ${newline === 'windows' ? 'CRLF' : 'bare LF'} line endings`, async () => {
        const message = await signed(raw, newline)
        expect(message.includes('\r\n')).toBe(newline === 'windows')
        for (const size of SIZES) expect({ size, results: await verifyInChunks(message, size) }).toEqual({ size, results: ['pass'] })
      })
    }
  }

  test('a changed body fails whatever the chunking', async () => {
    const message = await signed(MESSAGES['a body of several lines'], 'windows')
    const tampered = Buffer.from(message.toString('latin1').replace('last line', 'last lime'), 'latin1')
    for (const size of SIZES) expect((await verifyInChunks(tampered, size))[0]).not.toBe('pass')
  })

  test('a header section that ends exactly at a chunk boundary, in CR and LF halves', async () => {
    const message = await signed(MESSAGES['a body of several lines'], 'windows')
    const end = message.indexOf('\r\n\r\n')
    for (const cut of [end + 1, end + 2, end + 3, end + 4]) {
      const result = await dkimVerify(Readable.from([message.subarray(0, cut), message.subarray(cut)]), { resolver: resolver as never })
      expect((result.results as { status: { result: string } }[])[0]!.status.result).toBe('pass')
    }
  })
})

/** The parser's split of `raw` fed `size` bytes at a time: the header section and the body, as text. */
async function split(raw: string, size: number): Promise<{ header: string; body: string }> {
  const body: Buffer[] = []
  let header = ''
  const parser = new (class extends MessageParser {
    override async messageHeaders(headers: { original: Buffer }) {
      header = headers.original.toString('latin1')
    }
    override async nextChunk(chunk: Buffer) {
      body.push(chunk)
    }
  })()
  const bytes = Buffer.from(raw, 'latin1')
  for (let at = 0; at < bytes.length; at += size) await parser.writeAsync(bytes.subarray(at, at + size))
  await parser.finish()
  return { header, body: Buffer.concat(body).toString('latin1') }
}

/** What the split must be, worked out on the whole text: bare LFs become CRLF, and the first empty line ends the header section. */
function expectedSplit(raw: string): { header: string; body: string } {
  const text = raw.replace(/(?<!\r)\n/g, '\r\n')
  if (text.startsWith('\r\n')) return { header: '\r\n', body: text.slice(2) }
  const end = text.indexOf('\r\n\r\n')
  return end < 0 ? { header: text, body: '' } : { header: text.slice(0, end + 4), body: text.slice(end + 4) }
}

describe("mailauth's message parser", () => {
  const cases = {
    'headers and a body': 'From: a@b.example\r\nTo: c@d.example\r\n\r\nline one\r\n\r\nline two\r\n',
    'bare LF line endings': 'From: a@b.example\nSubject: s\n\nbody\nmore\n',
    'mixed line endings and a lone CR': 'From: a@b.example\r\nX: y\n\r\nbody\rstill\n\nend',
    'no header section (an empty first line)': '\r\nFrom: looks like a header\r\n',
    'no header section, bare LF': '\nbody\n',
    'no body (no empty line)': 'From: a@b.example\r\nSubject: s',
    'an empty message': '',
  }
  for (const [name, raw] of Object.entries(cases)) {
    test(`${name}: the same split in chunks of every size`, async () => {
      const expected = expectedSplit(raw)
      for (let size = 1; size <= Math.max(1, raw.length); size++) expect({ size, ...(await split(raw, size)) }).toEqual({ size, ...expected })
    })
  }

  test('is the patched one (a mailauth update has to carry the patch over, or drop it on purpose)', () => {
    expect(MessageParser.prototype.ensureLinebreaks.toString()).toContain('input.indexOf(')
  })
})
