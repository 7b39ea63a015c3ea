/**
 * A real browser (headless Chromium through playwright-core, which never downloads browsers)
 * signs a person in on the OAuth authorization page and on the CLI device approval page, over
 * real HTTP: the pages must work with their security headers (CSP without scripts, form-action,
 * HttpOnly SameSite cookies, the 303 back to the client) as a browser enforces them.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { launchChromium, skipBrowser } from '../helpers/chromium'
import { authorizeUrl, oauthServer, person, pkce, registerClient, type OAuthServer } from './helpers'

const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

async function browser() {
  const { context, close } = await launchChromium()
  cleanups.push(close)
  return context
}

/** The OAuth client's loopback redirect receiver: records the callbacks it received. */
function callbackReceiver() {
  const calls: URL[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      // the browser also asks for /favicon.ico
      const url = new URL(request.url)
      if (url.pathname === '/callback') calls.push(url)
      return new Response('<!doctype html><title>done</title><p>You can close this window.</p>', { headers: { 'content-type': 'text/html' } })
    },
  })
  cleanups.push(() => server.stop(true))
  return { redirectUri: `http://127.0.0.1:${server.port}/callback`, calls }
}

describe('in a real browser', () => {
  test.skipIf(skipBrowser)(
    'OAuth sign-in page and CLI device approval page, driven by headless Chromium',
    async () => {
      const s: OAuthServer = await oauthServer()
      cleanups.push(() => s.stop())
      const context = await browser()
      const page = await context.newPage()
      const who = await person('admin')

      // 1. OAuth authorization code flow: sign in, the organization (preselected), the 303 back to the client
      const receiver = callbackReceiver()
      const client = await registerClient(s, [receiver.redirectUri], 'Browser test app')
      const p = await pkce()
      await page.goto(`${s.origin}${authorizeUrl(s, client, p)}`)
      expect(await page.title()).toBe('Sign in to authorize')
      await page.fill('#email', who.email)
      await page.fill('#password', who.password)
      await page.click('button[value=allow]')
      await page.waitForSelector('input[name=org_id]')
      expect(await page.isChecked(`input[name=org_id][value="${who.orgId}"]`)).toBe(true)
      await Promise.all([page.waitForURL(url => url.toString().startsWith(receiver.redirectUri)), page.click('button[value=allow]')])
      expect(receiver.calls).toHaveLength(1)
      const params = oauth.validateAuthResponse(s.as, client, receiver.calls[0]!, p.state)
      const response = await oauth.authorizationCodeGrantRequest(s.as, client, oauth.None(), params, receiver.redirectUri, p.verifier, s.opts)
      const tokens = await oauth.processAuthorizationCodeResponse(s.as, client, response)
      const whoami: any = await (await s.fetch('/v1/whoami', { headers: { authorization: `Bearer ${tokens.access_token}` } })).json()
      expect(whoami.data).toMatchObject({ org_id: who.orgId, user_id: who.userId, role: 'admin', auth_method: 'oauth' })

      // 2. CLI device login: start, approve in the browser, poll
      const start: any = await (
        await s.fetch('/v1/cli/login/start', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_name: 'agent-mail cli', device_name: 'browser-test' }),
        })
      ).json()
      const { device_code, user_code, verification_uri_complete } = start.data
      expect(verification_uri_complete).toStartWith(`${s.origin}/cli/device?user_code=`)
      const pending: any = await (
        await s.fetch('/v1/cli/login/poll', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code }) })
      ).json()
      expect(pending.error.code).toBe('authorization_pending')

      await page.goto(verification_uri_complete)
      expect(await page.title()).toBe('Sign in to the CLI')
      expect(await page.inputValue('#user_code')).toBe(user_code)
      await page.fill('#email', who.email)
      await page.fill('#password', who.password)
      await page.click('button[value=continue]')
      await page.waitForSelector('#confirm-code')
      expect(await page.textContent('#confirm-code')).toBe(user_code)
      expect(await page.textContent('main')).toContain('agent-mail cli on browser-test')
      await page.click('button[value=approve]')
      await page.waitForSelector('text=Device approved')

      const [cookie] = (await context.cookies(`${s.origin}/cli/device`)).filter(c => c.name === 'cli_browser')
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/cli' })

      // the client waits out the interval before polling again
      await s.ctx.sql`update cli_device_codes set last_polled_at = null where device_code_hash = sha256(${device_code}::bytea)`
      const approved: any = await (
        await s.fetch('/v1/cli/login/poll', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code }) })
      ).json()
      expect(approved.success).toBe(true)
      expect(approved.data).toMatchObject({ org_id: who.orgId, user_id: who.userId, token_type: 'Bearer' })
      const cliWhoami: any = await (await s.fetch('/v1/whoami', { headers: { authorization: `Bearer ${approved.data.access_token}` } })).json()
      expect(cliWhoami.data).toMatchObject({ org_id: who.orgId, role: 'admin' })
    },
    60_000,
  )
})
