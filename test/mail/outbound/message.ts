/** A full outbound message for the tests, and a DKIM check of received bytes with mailauth. */
import { authenticate } from 'mailauth'
import { memoryResolver } from '../../../src/dns/resolver'
import type { OutboundMessage } from '../../../src/mail/outbound/build'

export const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')

export function fullMessage(from: string, overrides: Partial<OutboundMessage> = {}): OutboundMessage {
  return {
    from: { address: from, name: 'Support Agent' },
    to: ['alice@example.com', 'bob@example.net'],
    cc: ['carol@example.org'],
    bcc: ['hidden@example.com'],
    replyTo: ['replies@example.com'],
    subject: 'Grüße — your order №42 ✓',
    text: 'Hello Alice,\nyour order is on its way.\n',
    html: '<p>Hello Alice,</p><p>your order is <b>on its way</b>.</p><img src="cid:logo@x">',
    attachments: [
      { filename: 'invoice.pdf', content_type: 'application/pdf', content_base64: Buffer.from('%PDF-1.4 fake').toString('base64') },
      { filename: 'logo.png', content_type: 'image/png', content_base64: PNG.toString('base64'), content_id: 'logo@x' },
    ],
    headers: { 'X-Campaign': 'spring', 'List-Unsubscribe': '<mailto:unsubscribe@example.com>' },
    messageId: `<${crypto.randomUUID()}@${from.split('@')[1]}>`,
    inReplyTo: '<parent@example.com>',
    references: ['<root@example.com>', '<parent@example.com>'],
    date: new Date('2025-07-01T09:30:00Z'),
    jsonPart: { filename: 'interaction.json', json: { type: 'repeat.tick/1', tick: 1 } },
    ...overrides,
  }
}

/** mailauth's verdict on the DKIM signatures of `raw`, with `txt` published for `selector._domainkey.domain`. */
export async function verifyDkim(raw: string, records: Record<string, string>) {
  const resolver = memoryResolver(Object.fromEntries(Object.entries(records).map(([name, value]) => [name, { TXT: [value.match(/.{1,255}/g)!] }])))
  const result = await authenticate(Buffer.from(raw), {
    ip: '127.0.0.1',
    helo: 'relay.test',
    sender: 'bounce@example.com',
    mta: 'mx.test',
    resolver: resolver as never,
    disableBimi: true,
  })
  return (result.dkim?.results ?? []) as { signingDomain: string; selector: string; status: { result: string }; signingHeaders?: { keys: string } }[]
}

/** Header lines of a raw message, unfolded, with lowercase names. */
export function headerFields(raw: string): { name: string; value: string }[] {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'))
  return head
    .replace(/\r\n[ \t]/g, ' ')
    .split('\r\n')
    .map(line => ({ name: line.slice(0, line.indexOf(':')).toLowerCase(), value: line.slice(line.indexOf(':') + 1).trim() }))
}
