/**
 * The console in a real browser (headless Chromium, test/helpers/chromium.ts) over real HTTP,
 * with real peers: mail arrives over SMTP, webhooks go to a loopback receiver, a held send goes
 * out to a loopback relay once approved, and an image server counts what the browser asks of it.
 * The screenshots of docs/console.md are taken here (UPDATE_SCREENSHOTS=1 writes them to docs/).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { Page } from 'playwright-core'
import { createApiKey } from '../../src/auth/api-keys'
import { JOB_KINDS } from '../../src/job-kinds'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { inboundHooks } from '../../src/mail/inbound/smtp-hooks'
import { smtpOptions } from '../../src/roles'
import { relayOf } from '../../src/sending/relay'
import { startSmtpServer } from '../../src/smtp/server'
import { testSql } from '../helpers/app'
import { launchChromium, skipBrowser } from '../helpers/chromium'
import { managedAddress } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { until } from '../helpers/until'
import { oauthServer, person, type OAuthServer, type Person } from '../oauth/helpers'

/** The screenshots go to docs/ when asked (UPDATE_SCREENSHOTS=1), so a test run leaves the work tree as it was. */
const SHOTS = process.env.UPDATE_SCREENSHOTS ? join(import.meta.dir, '../../docs') : mkdtempSync(join(tmpdir(), 'console-shots-'))
const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

let s: OAuthServer
let who: Person
let key: string
let inbox: string
let receiver: Receiver
let relay: TestRelay
const imageRequests: string[] = []
let imageOrigin: string

/** Requests the service as the organization's API key. */
async function api(method: string, path: string, body?: unknown) {
  const res = await s.fetch(path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: res.status, body: (await res.json()) as any }
}

beforeAll(async () => {
  if (skipBrowser) return
  relay = await startTestRelay()
  cleanups.push(() => relay.stop())
  receiver = startReceiver()
  cleanups.push(() => receiver.stop())
  const images = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      imageRequests.push(new URL(request.url).pathname)
      return new Response(Buffer.from('R0lGODlhAQABAAAAACw=', 'base64'), { headers: { 'content-type': 'image/gif' } })
    },
  })
  imageOrigin = `http://127.0.0.1:${images.port}`
  cleanups.push(() => images.stop(true))

  s = await oauthServer({
    SMTP_HOSTNAME: 'mx.test.local',
    SMTP_PORT: '0',
    SMTP_RELAY_URL: relay.url,
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_RETRY_SCHEDULE: '1,1',
  })
  cleanups.push(() => s.stop())
  cleanups.push(() => relayOf(s.ctx).close())
  const worker: Worker = await startWorker(s.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  cleanups.push(() => worker.stop(1000))
  const smtp = await startSmtpServer(smtpOptions(s.ctx.config), inboundHooks(s.ctx))
  cleanups.push(() => smtp.stop(1000))

  who = await person('owner')
  const sql = await testSql()
  key = (await sql.begin(tx => createApiKey(tx, who.orgId, who.userId, 'setup'))).key
  inbox = await managedAddress(s.ctx, who.orgId)
  expect((await api('POST', '/v1/endpoints', { url: receiver.url('/hook') })).status).toBe(201)

  // a message with an HTML part that asks for a remote image, an attachment, over SMTP
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true, name: 'client.sender.example' })
  cleanups.push(() => transport.close())
  await transport.sendMail({
    from: 'Grace <grace@sender.example>',
    to: inbox,
    subject: 'Quarterly numbers',
    text: 'The numbers are in the attachment.',
    html: `<h2 style="color:#234">The numbers</h2><p>They are <b>good</b>.</p><img alt="tracking pixel" src="${imageOrigin}/pixel.gif">`,
    attachments: [{ filename: 'numbers.csv', content: 'q,revenue\n3,42\n' }],
  })
  await receiver.waitFor(1, '/hook', 15_000)
}, 60_000)

async function signIn(page: Page) {
  await page.goto(`${s.origin}/console`)
  expect(await page.title()).toBe('Sign in · Agent mail console')
  await page.fill('#email', who.email)
  await page.fill('#password', who.password)
  await Promise.all([page.waitForURL(`${s.origin}/console/inboxes`), page.click('button[type=submit]')])
}

describe('the console in a real browser', () => {
  test.skipIf(skipBrowser)(
    'sign in, read a thread that came over SMTP with its HTML sandboxed and remote images blocked, replay a delivery, approve a draft, create and revoke a key',
    async () => {
      const { context, close } = await launchChromium()
      cleanups.push(close)
      const page = await context.newPage()
      const failures: string[] = []
      page.on('pageerror', e => failures.push(e.message))

      // sign in: the session cookie is HttpOnly and SameSite, scoped to the console
      await signIn(page)
      const [cookie] = (await context.cookies(`${s.origin}/console`)).filter(c => c.name === 'console_session')
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/console' })
      await page.waitForSelector(`text=${inbox}`)
      await page.screenshot({ path: join(SHOTS, 'console-inboxes.png'), fullPage: true })

      // the inbox, then the thread: text, HTML in a sandboxed frame, attachment, verdicts
      await page.click(`a:text("${inbox}")`)
      await page.waitForSelector('a:text("Quarterly numbers")')
      await page.click('a:text("Quarterly numbers")')
      await page.waitForSelector('iframe.message-html')
      expect(await page.textContent('pre.message-text')).toContain('The numbers are in the attachment.')
      const frameElement = await page.$('iframe.message-html')
      expect(await frameElement!.getAttribute('sandbox')).toBe('')
      const frame = await frameElement!.contentFrame()
      await frame!.waitForSelector('b')
      expect(await frame!.textContent('body')).toContain('They are good.')
      // the frame runs no script of its own: a sandbox without allow-scripts
      expect(await page.locator('a:text("numbers.csv")').count()).toBe(1)
      await page.click('summary')
      expect(await page.textContent('ul[aria-label="Authentication verdicts"]')).toContain('SPF')
      await Bun.sleep(300)
      expect(imageRequests).toEqual([])
      await page.screenshot({ path: join(SHOTS, 'console-thread.png'), fullPage: true })

      // remote content only when asked: the frame reloads with the image allowed
      await page.click('a:text("Load remote content")')
      await until(
        async () => imageRequests.length,
        n => n > 0,
        5000,
      )
      expect(imageRequests).toEqual(['/pixel.gif'])

      // the attachment downloads through its short-lived signed link
      const download = await Promise.all([page.waitForEvent('download'), page.click('a:text("numbers.csv")')])
      expect(download[0].suggestedFilename()).toBe('numbers.csv')

      // webhooks: the delivery of this message, replayed: a new attempt reaches the receiver
      await page.click('nav a:text("Webhooks")')
      await page.waitForSelector('text=email.received')
      await page.click('table a >> nth=0')
      await page.waitForSelector('#delivery-attempts')
      expect(await page.textContent('#delivery-attempts')).toBe('1')
      await page.click('button:text("Replay this delivery")')
      await page.waitForSelector('text=Replayed: the endpoint accepted it.')
      expect(await page.textContent('#delivery-attempts')).toBe('2')
      expect(receiver.requests.filter(r => r.path === '/hook')).toHaveLength(2)
      await page.screenshot({ path: join(SHOTS, 'console-delivery.png'), fullPage: true })

      // a send held for approval, approved in the console: the relay receives it
      expect((await api('PUT', `/v1/approval-policies/${inbox}`, { approval_required: true })).status).toBe(200)
      const held = await api('POST', '/v1/send-mail', { from: inbox, to: 'alice@example.com', subject: 'Offer to Alice', body_text: 'Shall we?' })
      expect(held.status).toBe(202)
      await page.click('nav a:text("Drafts")')
      await page.waitForSelector('text=Offer to Alice')
      await page.screenshot({ path: join(SHOTS, 'console-drafts.png'), fullPage: true })
      await page.click('button[aria-label="Approve “Offer to Alice”"]')
      await page.waitForSelector('text=Approved;')
      expect(await page.locator('text=Offer to Alice').count()).toBe(0)
      const [sent] = await relay.waitFor(1, 15_000)
      expect(sent!.raw).toContain('Offer to Alice')

      // API keys: a new key is shown once and works; revoked, it stops working
      await page.click('nav a:text("API keys")')
      await page.fill('#key-name', 'browser key')
      await page.click('button:text("Create key")')
      await page.waitForSelector('#new-key-secret')
      const secret = (await page.textContent('#new-key-secret'))!.trim()
      expect(secret).toStartWith('svc_')
      await page.screenshot({ path: join(SHOTS, 'console-keys.png'), fullPage: true })
      const whoami = (k: string) => s.fetch('/v1/whoami', { headers: { authorization: `Bearer ${k}` } })
      expect((await whoami(secret)).status).toBe(200)
      // the page loaded again no longer shows the secret
      await page.click('nav a:text("API keys")')
      await page.waitForSelector('#new-key-secret', { state: 'detached' })
      await page.click('button[aria-label="Revoke browser key"]')
      await page.waitForSelector('text=Revoked “browser key”.')
      expect((await whoami(secret)).status).toBe(401)

      // signing out ends the session: the console asks to sign in again
      await page.click('button:text("Sign out")')
      await page.waitForSelector('#password')
      await page.goto(`${s.origin}/console/keys`)
      expect(await page.title()).toBe('Sign in · Agent mail console')
      expect(failures).toEqual([])
    },
    120_000,
  )
})
