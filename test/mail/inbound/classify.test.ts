/** Machine mail (bounces, reports) is classified by its event type. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../../helpers/app'
import { inboundHarness, managedAddress, rfc822, type InboundHarness } from '../../helpers/mail'

let h: InboundHarness, alice: TestOrg, aliceAddress: string

beforeAll(async () => {
  h = await inboundHarness()
  alice = await createOrg({ plan: 'developer' })
  aliceAddress = await managedAddress(h.ctx, alice.orgId)
})
afterAll(() => h.stop())

describe('machine mail is classified', () => {
  test('a delivery status notification is email.bounced', async () => {
    const boundary = 'b1'
    const dsn = rfc822(
      {
        From: 'MAILER-DAEMON@sender.example',
        To: aliceAddress,
        Subject: 'Undelivered Mail Returned to Sender',
        'MIME-Version': '1.0',
        'Content-Type': `multipart/report; report-type=delivery-status; boundary="${boundary}"`,
      },
      `--${boundary}\nContent-Type: text/plain\n\nDelivery failed.\n--${boundary}\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.sender.example\n\nFinal-Recipient: rfc822; nobody@sender.example\nAction: failed\nStatus: 5.1.1\n--${boundary}--\n`,
    )
    await h.transport.sendMail({ envelope: { from: '', to: [aliceAddress] } as never, raw: dsn })
    const summary = await h.latest(alice)
    expect(summary.event_type).toBe('email.bounced')
    expect((await h.email(alice, summary.id)).envelope.mail_from).toBe('')
  })

  test('a DMARC aggregate report is email.dmarc_report', async () => {
    await h.transport.sendMail({
      from: 'noreply-dmarc@reporter.example',
      to: aliceAddress,
      subject: 'Report Domain: agents.example Submitter: reporter.example Report-ID: <1234>',
      text: 'DMARC aggregate report',
      attachments: [
        {
          filename: 'reporter.example!agents.example!1!2.xml.gz',
          content: Buffer.from(Bun.gzipSync(new TextEncoder().encode('<feedback/>'))),
          contentType: 'application/gzip',
        },
      ],
    })
    expect((await h.latest(alice)).event_type).toBe('email.dmarc_report')
  })

  test('a TLS report and a DMARC failure report', async () => {
    const b = 'b2'
    await h.transport.sendMail({
      envelope: { from: 'tls@reporter.example', to: [aliceAddress] },
      raw: rfc822(
        {
          From: 'tls@reporter.example',
          To: aliceAddress,
          Subject: 'Report Domain: x',
          'MIME-Version': '1.0',
          'Content-Type': `multipart/report; report-type=tlsrpt; boundary="${b}"`,
        },
        `--${b}\nContent-Type: text/plain\n\nTLS report\n--${b}\nContent-Type: application/tlsrpt+gzip\nContent-Transfer-Encoding: base64\n\nH4sIAAAAAAAAA6uuBQBDv6ajAgAAAA==\n--${b}--\n`,
      ),
    })
    expect((await h.latest(alice)).event_type).toBe('email.tls_report')
    await h.transport.sendMail({
      envelope: { from: 'arf@reporter.example', to: [aliceAddress] },
      raw: rfc822(
        {
          From: 'arf@reporter.example',
          To: aliceAddress,
          Subject: 'DMARC failure',
          'MIME-Version': '1.0',
          'Content-Type': `multipart/report; report-type=feedback-report; boundary="${b}"`,
        },
        `--${b}\nContent-Type: text/plain\n\nauth failure\n--${b}\nContent-Type: message/feedback-report\n\nFeedback-Type: auth-failure\n--${b}--\n`,
      ),
    })
    expect((await h.latest(alice)).event_type).toBe('email.dmarc_failure')
  })
})
