/** Inbound mail fixtures: a real SMTP listener on the test database, DKIM keys and in-memory DNS. */
import { expect } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import nodemailer from 'nodemailer'
import { dkimSign } from 'mailauth/lib/dkim/sign'
import type { AppContext } from '../../src/context'
import { memoryResolver, type MemoryRecords } from '../../src/dns/resolver'
import { inboundHooks } from '../../src/mail/inbound/smtp-hooks'
import { smtpOptions } from '../../src/roles'
import { startSmtpServer } from '../../src/smtp/server'
import { createManagedInbox } from '../../src/inboxes/service'
import { testApp, testSql, type TestApp } from './app'

export interface InboundHarness extends TestApp {
  smtpPort: number
  dns: MemoryRecords
  /** nodemailer's SMTP transport pointed at our listener: a message is stored once sendMail resolves */
  transport: ReturnType<typeof nodemailer.createTransport>
  /** the organization's newest email, as GET /v1/emails lists it */
  latest(org: { key: string }): Promise<any>
  /** one email of the organization, as GET /v1/emails/{id} answers it */
  email(org: { key: string }, id: string): Promise<any>
  stop(): Promise<void>
}

export async function inboundHarness(env: Record<string, string> = {}): Promise<InboundHarness> {
  const resolver = memoryResolver({})
  const t = await testApp({ SMTP_HOSTNAME: 'mx.test.local', SMTP_PORT: '0', HOST: '127.0.0.1', ...env }, { resolver })
  const smtp = await startSmtpServer(smtpOptions(t.ctx.config), inboundHooks(t.ctx))
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true, name: 'client.sender.example' })
  return {
    ...t,
    smtpPort: smtp.port,
    dns: resolver.records,
    transport,
    async latest(org) {
      const list = await t.request('GET', '/v1/emails?limit=1', { key: org.key })
      expect(list.status).toBe(200)
      return list.body.data[0]
    },
    async email(org, id) {
      const res = await t.request('GET', `/v1/emails/${id}`, { key: org.key })
      expect(res.status).toBe(200)
      return res.body.data
    },
    async stop() {
      transport.close()
      await smtp.stop(1000)
    },
  }
}

export async function managedAddress(ctx: AppContext, orgId: string): Promise<string> {
  const sql = await testSql()
  return (await sql.begin(tx => createManagedInbox(tx, orgId, ctx.config.MANAGED_DOMAIN))).address
}

/** A sender domain with an RSA key published in `dns`, plus SPF for 127.0.0.1 and a DMARC policy. */
export function senderDomain(dns: MemoryRecords, domain: string, selector = 'sel') {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
  dns[`${selector}._domainkey.${domain}`] = { TXT: [[`v=DKIM1; k=rsa; p=${pub}`]] }
  dns[domain] = { TXT: [['v=spf1 ip4:127.0.0.1 -all']] }
  dns[`_dmarc.${domain}`] = { TXT: [['v=DMARC1; p=reject']] }
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  return {
    async sign(message: string): Promise<string> {
      const r = await dkimSign(message, { canonicalization: 'relaxed/relaxed', signatureData: [{ signingDomain: domain, selector, privateKey: pem }] } as never)
      return r.signatures + message
    },
  }
}

/** An RFC 5322 message with CRLF line endings. */
export function rfc822(headers: Record<string, string>, body: string): string {
  return (
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n') +
    '\r\n\r\n' +
    body.replace(/\r?\n/g, '\r\n')
  )
}
