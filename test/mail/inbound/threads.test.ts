/**
 * Received mail is parsed and authenticated on the inbound threads (src/mail/inbound/threads.ts):
 * their DNS questions reach the context's resolver, and a thread that dies mid-message costs
 * its sender a 451 and nothing else: the message sent again is stored, once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import nodemailer from 'nodemailer'
import { memoryResolver, type RecordType } from '../../../src/dns/resolver'
import { inboundHooks } from '../../../src/mail/inbound/smtp-hooks'
import { inboundThreads } from '../../../src/mail/inbound/threads'
import { smtpOptions } from '../../../src/roles'
import { startSmtpServer } from '../../../src/smtp/server'
import { createOrg, testApp, type TestApp, type TestOrg } from '../../helpers/app'
import { managedAddress, rfc822, senderDomain } from '../../helpers/mail'

const records = {}
const memory = memoryResolver(records)
const asked: string[] = []
/** set by a test: the next DNS question ends the thread that asked it */
let killNext = false
let t: TestApp, smtp: Awaited<ReturnType<typeof startSmtpServer>>, transport: ReturnType<typeof nodemailer.createTransport>
let org: TestOrg, address: string
const domain = senderDomain(records, 'threads.example')

beforeAll(async () => {
  t = await testApp(
    { SMTP_HOSTNAME: 'mx.test.local', SMTP_PORT: '0', HOST: '127.0.0.1', INBOUND_THREADS: '2' },
    {
      resolver: (name: string, rrtype: RecordType) => {
        asked.push(`${rrtype} ${name}`)
        if (killNext) {
          killNext = false
          for (const w of inboundThreads(t.ctx).workers) w.terminate()
          return new Promise(() => {})
        }
        return memory(name, rrtype)
      },
    },
  )
  smtp = await startSmtpServer(smtpOptions(t.ctx.config), inboundHooks(t.ctx))
  transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true, name: 'client.threads.example' })
  org = await createOrg({ plan: 'developer' })
  address = await managedAddress(t.ctx, org.orgId)
})
afterAll(async () => {
  transport.close()
  await smtp.stop(1000)
  inboundThreads(t.ctx).stop()
})

const signed = async (subject: string) =>
  domain.sign(rfc822({ From: 'sam@threads.example', To: address, Subject: subject, 'Message-ID': `<${crypto.randomUUID()}@threads.example>` }, 'Hello\n'))

const stored = async (subject: string) =>
  (await t.request('GET', '/v1/emails?limit=100', { key: org.key })).body.data.filter((e: { subject: string }) => e.subject === subject)

describe('inbound mail on the inbound threads', () => {
  test("a message is parsed and authenticated on a worker thread, whose DNS questions reach the context's resolver", async () => {
    const before = asked.length
    const info = await transport.sendMail({ envelope: { from: 'sam@threads.example', to: [address] }, raw: await signed('on a thread') })
    expect(info.response).toStartWith('250')
    expect(asked.slice(before)).toContain('TXT sel._domainkey.threads.example')
    expect([...inboundThreads(t.ctx).prepared.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1)
    const [summary] = await stored('on a thread')
    const email = (await t.request('GET', `/v1/emails/${summary.id}`, { key: org.key })).body.data
    expect(email.authentication).toMatchObject({ spf: { result: 'pass' }, dkim: [{ result: 'pass' }], dmarc: { result: 'pass' } })
  })

  test('a thread that dies mid-message: its sender gets 451, the message sent again is stored once', async () => {
    const raw = await signed('killed mid-message')
    killNext = true
    const refused = await transport.sendMail({ envelope: { from: 'sam@threads.example', to: [address] }, raw }).catch((e: { response?: string }) => e)
    expect(String((refused as { response?: string }).response)).toStartWith('451 4.3.0')
    expect(await stored('killed mid-message')).toHaveLength(0)
    const again = await transport.sendMail({ envelope: { from: 'sam@threads.example', to: [address] }, raw })
    expect(again.response).toStartWith('250')
    const [email, ...more] = await stored('killed mid-message')
    expect(more).toHaveLength(0)
    expect((await t.request('GET', `/v1/emails/${email.id}`, { key: org.key })).body.data.authentication.dkim[0].result).toBe('pass')
  })
})
