/** The report part of DSNs and ARF reports in the shapes MTAs send (test/fixtures/dsn/), and how they are classified. */
import { describe, expect, test } from 'bun:test'
import { classify } from '../../../src/mail/inbound/classify'
import { parseMail } from '../../../src/mail/inbound/parse'
import { isReport, parseReport } from '../../../src/mail/inbound/report'
import { report } from '../../bounces/reports'

const original = [
  'From: Agent <agent@agents.test.local>',
  'To: gone@example.com',
  'Subject: Hello',
  'Message-ID: <0193a2b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b@agents.test.local>',
  'MIME-Version: 1.0',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Hi there.',
  '',
].join('\r\n')
const fill = { sender: 'agent@agents.test.local', recipient: 'Gone@Example.com', original }
const bytes = (s: string) => new TextEncoder().encode(s)
const MESSAGE_ID = '<0193a2b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b@agents.test.local>'

describe('parseReport', () => {
  for (const [fixture, action, status, diagnostic] of [
    ['postfix-hard.eml', 'failed', '5.1.1', 'smtp; 550 5.1.1 <Gone@Example.com>: Recipient address rejected: User unknown in virtual mailbox table'],
    ['exim-hard.eml', 'failed', '5.0.0', 'smtp; 550 No such user here'],
    ['gmail-hard.eml', 'failed', '5.1.1', expect.stringMatching(/^smtp; The email account that you tried to reach does not exist\. .* - gsmtp$/)],
    ['gmail-delay.eml', 'delayed', '4.4.1', expect.stringContaining('timed out]')],
    ['microsoft-hard.eml', 'failed', '5.1.10', 'smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup'],
  ] as const) {
    test(`${fixture}: the recipient, action, status and unfolded diagnostic, and the original Message-ID`, async () => {
      const raw = bytes(await report(fixture, fill))
      const mail = await parseMail(raw)
      expect(isReport(mail.contentType)).toBe(true)
      expect(classify(mail, '', await parseReport(raw))).toBe('email.bounced')
      expect(await parseReport(raw)).toEqual({
        kind: 'delivery-status',
        recipients: [
          { address: 'gone@example.com', original: fixture === 'postfix-hard.eml' ? 'gone@example.com' : null, action, status, diagnosticCode: diagnostic },
        ],
        original: { messageId: MESSAGE_ID, from: 'agent@agents.test.local' },
      })
    })
  }

  test('an ARF abuse report: the feedback type, the complaining recipient, the original; classified email.complained', async () => {
    const raw = bytes(await report('arf-abuse.eml', fill))
    const parsed = await parseReport(raw)
    expect(parsed).toEqual({
      kind: 'feedback-report',
      feedbackType: 'abuse',
      recipients: ['gone@example.com'],
      original: { messageId: MESSAGE_ID, from: 'agent@agents.test.local' },
    })
    expect(classify(await parseMail(raw), 'feedback@arf.mail.example-isp.com', parsed)).toBe('email.complained')
  })

  test('an ARF authentication-failure report stays a DMARC failure report', async () => {
    const raw = bytes((await report('arf-abuse.eml', fill)).replace('Feedback-Type: abuse', 'Feedback-Type: auth-failure'))
    expect(classify(await parseMail(raw), '', await parseReport(raw))).toBe('email.dmarc_failure')
  })

  test('several recipients in one DSN; a non-mail address type is skipped', async () => {
    const raw = (await report('postfix-hard.eml', fill)).replace(
      'Final-Recipient: rfc822; Gone@Example.com',
      'Final-Recipient: x400; /G=gone/S=example/\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\nFinal-Recipient: rfc822; other@example.com\r\nAction: delayed\r\nStatus: 4.2.2\r\n\r\nFinal-Recipient: rfc822; Gone@Example.com',
    )
    const parsed = await parseReport(bytes(raw))
    expect(parsed?.kind === 'delivery-status' && parsed.recipients.map(r => [r.address, r.action, r.status])).toEqual([
      ['other@example.com', 'delayed', '4.2.2'],
      ['gone@example.com', 'failed', '5.1.1'],
    ])
  })

  test('a report without its machine-readable part is null (stored, never matched)', async () => {
    const raw = (await report('postfix-hard.eml', fill)).replace('Content-Type: message/delivery-status', 'Content-Type: text/plain')
    expect(await parseReport(bytes(raw))).toBeNull()
  })
})
