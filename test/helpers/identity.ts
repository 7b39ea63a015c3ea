/**
 * Identity test helpers: the verification code as mailed (read back from the local outbox, the
 * way a person reads their mailbox), the browser side of a CLI login driven with plain form
 * posts, and OAuth tokens obtained through that login.
 */
import { expect } from 'bun:test'
import type { TestApp, TestResponse } from './app'
import { testSql } from './app'
import { expectOk } from './envelope'
import { parseMail } from '../../src/mail/inbound/parse'
import type { Person } from '../oauth/helpers'

export const unique = () => crypto.randomUUID().slice(0, 8)
export const newEmail = (label = 'signup') => `${label}-${crypto.randomUUID()}@example.test`

/** Every verification mail sent to `email`, oldest first: subject, text and the 6-digit code. */
export async function mailsTo(email: string) {
  const sql = await testSql()
  const rows = await sql<{ raw: string; envelope_from: string }[]>`
    select raw, envelope_from from outbox_messages where lower(rcpt) = lower(${email}) order by created_at, id`
  return Promise.all(
    rows.map(async r => {
      const mail = await parseMail(new Uint8Array(Buffer.from(r.raw)))
      const code = /verification code is (\d{6})/.exec(mail.text ?? '')?.[1]
      return { from: r.envelope_from, subject: mail.subject, text: mail.text ?? '', code: code! }
    }),
  )
}

/** The code of the latest mail to `email`. */
export async function lastCode(email: string): Promise<string> {
  const mails = await mailsTo(email)
  expect(mails.length).toBeGreaterThan(0)
  return mails.at(-1)!.code
}

/** A 6-digit code other than `code`. */
export const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0')

export function hiddenField(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (!m) throw new Error(`no ${name} field in page:\n${html}`)
  return m[1]!
}

export interface DevicePage {
  res: TestResponse
  html: string
  pageId: string
  csrf: string
  cookie: string
}

/** GET /cli/device (optionally prefilled): the page, its hidden fields and the browser cookie. */
export async function openDevicePage(t: TestApp, userCode?: string, opts: { cookie?: string; ip?: string } = {}): Promise<DevicePage> {
  const res = await t.request('GET', `/cli/device${userCode ? `?user_code=${encodeURIComponent(userCode)}` : ''}`, {
    headers: opts.cookie ? { cookie: opts.cookie } : {},
    ip: opts.ip,
  })
  const html = res.body as string
  expect(res.status).toBe(200)
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!
  return { res, html, pageId: hiddenField(html, 'page_id'), csrf: hiddenField(html, 'csrf_token'), cookie }
}

/** Posts the page's form like a browser: urlencoded, with the cookie. */
export function submitDevicePage(t: TestApp, page: Pick<DevicePage, 'pageId' | 'csrf' | 'cookie'>, fields: Record<string, string>, opts: { ip?: string } = {}) {
  return t.request('POST', '/cli/device', {
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie },
    body: new URLSearchParams({ page_id: page.pageId, csrf_token: page.csrf, ...fields }).toString(),
    ip: opts.ip,
  })
}

export async function startLogin(t: TestApp, body?: unknown, headers: Record<string, string> = {}) {
  return expectOk(await t.request('POST', '/v1/cli/login/start', { body, headers }), 201)
}

/** Signs `who` in on the device page for `userCode` and approves (or denies) it for `orgId`. */
export async function decideInBrowser(t: TestApp, who: Person, userCode: string, decision: 'approve' | 'deny', orgId = who.orgId) {
  const page = await openDevicePage(t, userCode)
  const confirm = await submitDevicePage(t, page, { user_code: userCode, email: who.email, password: who.password, action: 'continue' })
  expect(confirm.status).toBe(200)
  expect(confirm.body).toContain('Approve this device?')
  const done = await submitDevicePage(t, page, { action: decision, org_id: orgId })
  expect(done.status).toBe(200)
  return done
}

/** Lets the next poll count as on time (tests do not wait out the 5-second interval). */
export async function forgetLastPoll(deviceCode: string) {
  const sql = await testSql()
  await sql`update cli_device_codes set last_polled_at = null where device_code_hash = sha256(${deviceCode}::bytea)`
}

/** A whole CLI login for `who` in `orgId`: start, approve in the browser, poll. Returns the token set. */
export async function loginTokens(t: TestApp, who: Person, orgId = who.orgId) {
  const started = await startLogin(t, { client_name: 'test cli', device_name: 'test host' })
  await decideInBrowser(t, who, started.user_code, 'approve', orgId)
  return expectOk(await t.request('POST', '/v1/cli/login/poll', { body: { device_code: started.device_code } }))
}
