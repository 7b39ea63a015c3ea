/**
 * The OAuth harness: the app listening on a loopback port whose origin is its PUBLIC_URL (the
 * issuer), oauth4webapi pointed at it, people with passwords, and a "browser" that loads the
 * authorization page and posts its form the way a browser does (cookie, hidden fields, no
 * redirect following).
 */
import * as oauth from 'oauth4webapi'
import { createApp } from '../../src/app'
import { createContext, type AppContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { addMember } from '../../src/account/membership-queries'
import { ensureUser } from '../../src/account/user-queries'
import type { Role } from '../../src/auth/principal'
import { createOrg, TEST_SECRET, testConfig, testSql } from '../helpers/app'
import { PLUGINS } from '../../src/plugins'

let ipCounter = 0

export interface OAuthServer {
  origin: string
  ctx: AppContext
  as: oauth.AuthorizationServer
  /** oauth4webapi options: loopback http allowed, requests carry this server's client address */
  opts: { [oauth.allowInsecureRequests]: true; [oauth.customFetch]: typeof fetch }
  /** fetch against the server with this test file's client address; never follows redirects */
  fetch(path: string, init?: RequestInit): Promise<Response>
  /** a fetch from another client address (for rate-limit tests) */
  fetchFrom(ip: string, path: string, init?: RequestInit): Promise<Response>
  stop(): Promise<void>
}

async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

export async function oauthServer(env: Record<string, string> = {}): Promise<OAuthServer> {
  // PUBLIC_URL must be known before the app is built, so take a free port first
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const ctx = createContext(testConfig({ PUBLIC_URL: origin, ...env }), await testSql(), new ServerKeys(TEST_SECRET), { plugins: PLUGINS })
  const app = createApp(ctx).listen({ port, hostname: '127.0.0.1' })
  const ip = `203.0.113.${(ipCounter = (ipCounter % 250) + 1)}.${process.pid}.${Math.floor(Math.random() * 1e6)}`
  const withIp = (from: string, init: RequestInit = {}): RequestInit => {
    const headers = new Headers(init.headers)
    headers.set('x-forwarded-for', from)
    return { ...init, headers, redirect: 'manual' }
  }
  const customFetch = ((url: string | URL | Request, init?: RequestInit) => fetch(url, withIp(ip, init))) as typeof fetch
  const opts = { [oauth.allowInsecureRequests]: true as const, [oauth.customFetch]: customFetch }
  const as = await oauth.processDiscoveryResponse(new URL(origin), await oauth.discoveryRequest(new URL(origin), { algorithm: 'oauth2', ...opts }))
  return {
    origin,
    ctx,
    as,
    opts,
    fetch: (path, init) => fetch(`${origin}${path}`, withIp(ip, init)),
    fetchFrom: (from, path, init) => fetch(`${origin}${path}`, withIp(from, init)),
    stop: async () => {
      await app.stop(true)
    },
  }
}

export interface Person {
  email: string
  password: string
  userId: string
  orgId: string
}

let personCounter = 0

/**
 * A person with a password who is `role` in a new organization (plus `alsoIn` organizations).
 * The argon2id hash uses cheap parameters to keep tests fast; verification reads them from the
 * hash, so sign-in runs the production code path (the operator command's own hash is tested in
 * admin.test.ts).
 */
export async function person(role: Role = 'owner', alsoIn: { orgId: string; role: Role }[] = []): Promise<Person> {
  const sql = await testSql()
  const org = await createOrg()
  const email = `signin-${++personCounter}-${crypto.randomUUID()}@example.test`
  const password = `correct horse ${crypto.randomUUID()}`
  const hash = await Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: 256, timeCost: 1 })
  const userId = await sql.begin(async tx => {
    const id = await ensureUser(tx, email)
    await tx`update users set password_hash = ${hash} where id = ${id}`
    await addMember(tx, org.orgId, id, role)
    for (const m of alsoIn) await addMember(tx, m.orgId, id, m.role)
    return id
  })
  return { email, password, userId, orgId: org.orgId }
}

export const REDIRECT = 'http://127.0.0.1:8765/callback'

export async function registerClient(s: OAuthServer, redirectUris = [REDIRECT], name = 'Test agent'): Promise<oauth.Client> {
  const res = await oauth.dynamicClientRegistrationRequest(s.as, { client_name: name, redirect_uris: redirectUris, token_endpoint_auth_method: 'none' }, s.opts)
  return oauth.processDynamicClientRegistrationResponse(res)
}

export interface Pkce {
  verifier: string
  challenge: string
  state: string
}

export async function pkce(): Promise<Pkce> {
  const verifier = oauth.generateRandomCodeVerifier()
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier), state: oauth.generateRandomState() }
}

export function authorizeUrl(s: OAuthServer, client: oauth.Client, p: Pkce, overrides: Record<string, string | null> = {}): string {
  const url = new URL(s.as.authorization_endpoint!)
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: (client.redirect_uris as string[])[0]!,
    code_challenge: p.challenge,
    code_challenge_method: 'S256',
    state: p.state,
    scope: 'service:api',
    ...overrides,
  }
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v)
  return url.pathname + url.search
}

/** A loaded authorization page: its hidden fields and the browser cookie it set. */
export interface Page {
  status: number
  headers: Headers
  html: string
  requestId: string
  csrf: string
  cookie: string
}

export function hiddenField(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (!m) throw new Error(`no ${name} field in page:\n${html}`)
  return m[1]!
}

export async function loadPage(s: OAuthServer, path: string, cookie?: string): Promise<Page> {
  const res = await s.fetch(path, { headers: cookie ? { cookie } : {} })
  const html = await res.text()
  if (res.status !== 200) throw new Error(`authorization page: ${res.status} ${html}`)
  const setCookie = res.headers.get('set-cookie') ?? ''
  return {
    status: res.status,
    headers: res.headers,
    html,
    requestId: hiddenField(html, 'request_id'),
    csrf: hiddenField(html, 'csrf_token'),
    cookie: setCookie.split(';')[0]!,
  }
}

/** Posts the page's form like a browser: urlencoded, the cookie, redirects not followed. */
export function submit(s: OAuthServer, page: Pick<Page, 'requestId' | 'csrf' | 'cookie'>, fields: Record<string, string>): Promise<Response> {
  return s.fetch('/oauth/authorize', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie },
    body: new URLSearchParams({ request_id: page.requestId, csrf_token: page.csrf, ...fields }),
  })
}

/** Signs `who` in on the page and picks `orgId`; returns the redirect URL carrying the code. */
export async function authorizeAs(s: OAuthServer, client: oauth.Client, who: Person, p: Pkce, orgId = who.orgId): Promise<URL> {
  const page = await loadPage(s, authorizeUrl(s, client, p))
  const res = await submit(s, page, { email: who.email, password: who.password, org_id: orgId, action: 'allow' })
  if (res.status !== 303) throw new Error(`sign-in: ${res.status} ${await res.text()}`)
  return new URL(res.headers.get('location')!)
}

/** The whole flow: sign-in, code, exchange with oauth4webapi. */
export async function obtainTokens(s: OAuthServer, client: oauth.Client, who: Person, orgId = who.orgId) {
  const p = await pkce()
  const callback = await authorizeAs(s, client, who, p, orgId)
  const params = oauth.validateAuthResponse(s.as, client, callback, p.state)
  const res = await oauth.authorizationCodeGrantRequest(s.as, client, oauth.None(), params, (client.redirect_uris as string[])[0]!, p.verifier, s.opts)
  return oauth.processAuthorizationCodeResponse(s.as, client, res)
}

/** GET /v1/whoami (or another API call) with a bearer, through oauth4webapi. */
export async function callApi(s: OAuthServer, token: string, method: string, path: string, body?: unknown) {
  const headers = new Headers(body === undefined ? {} : { 'content-type': 'application/json' })
  let res: Response
  try {
    res = await oauth.protectedResourceRequest(token, method, new URL(`${s.origin}${path}`), headers, body === undefined ? null : JSON.stringify(body), s.opts)
  } catch (error) {
    // a 401 carries a WWW-Authenticate challenge, which oauth4webapi raises
    if (!(error instanceof oauth.WWWAuthenticateChallengeError)) throw error
    res = error.response
  }
  return { status: res.status, headers: res.headers, body: (await res.json()) as any }
}

/** A token endpoint request as raw form fields (for the error cases oauth4webapi would not send). */
export async function tokenRequest(s: OAuthServer, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await s.fetch('/oauth/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  })
  return { status: res.status, headers: res.headers, body: (await res.json()) as any }
}
