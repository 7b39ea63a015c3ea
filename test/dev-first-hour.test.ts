/**
 * A newcomer's first hour with `make dev`, run as `make dev` itself (make's own process, so the
 * signals go where a person or a supervisor sends them): the banner says how to sign in, stop
 * and reset; the log is short lines and stays quiet while nothing happens; `agent-mail login`
 * works with the printed sign-in; SIGINT to make's pid stops the service; `make reset` deletes
 * the data directory and nothing else.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'node:net'
import nodemailer from 'nodemailer'
import { devEnv, freePort, REPO } from './helpers/dev-process'
import { hiddenField } from './helpers/identity'
import { BIN, watch, type Watched } from './cli-client/helpers'

const dir = mkdtempSync(join(tmpdir(), 'first-hour-'))
const dataDir = join(dir, '.data')
const port = freePort()
const origin = `http://localhost:${port}`
let make: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
let out: Watched
let bannerAt = 0

/** Does a TCP connection to the API port succeed? */
function reachable(): Promise<boolean> {
  return new Promise(resolve => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

beforeAll(async () => {
  // `env --default-signal`: a test runner started in the background may hand its children SIGINT ignored
  make = Bun.spawn(['env', '--default-signal=INT', 'make', '-s', 'dev'], {
    cwd: REPO,
    env: devEnv({ DATA_DIR: dataDir, PORT: String(port), SMTP_PORT: '0', LOG_LEVEL: undefined, LOG_FORMAT: undefined }),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  out = watch(make.stdout)
  void new Response(make.stderr).text().then(text => text && console.error(text))
  await out.until(/Reset: .*\n/)
  bannerAt = Date.now()
}, 120_000) // the embedded database's cold start takes seconds, more on a busy machine
afterAll(() => {
  make?.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

describe('make dev, the first hour', () => {
  test('the banner says how to sign in, where that is kept, how to stop and how to reset', () => {
    expect(out.text).toMatch(/^ {2}Sign in {6}dev@localhost with password \S{12,} \(the console, agent-mail login, the OAuth pages\)$/m)
    expect(out.text).toContain(`Kept in      ${dataDir}/dev-org.json`)
    expect(out.text).toContain('Stop:        Ctrl-C')
    expect(out.text).toContain(`Reset:       stop, then make reset (deletes ${dataDir}/ and nothing else)`)
  })

  test('agent-mail login works with the printed sign-in, and the CLI then acts for the development organization', async () => {
    const [, email, password] = /Sign in +(\S+) with password (\S+)/.exec(out.text)!
    const orgId = /Development organization (\S+)/.exec(out.text)![1]!
    const home = join(dir, 'config')
    const env = { ...process.env, XDG_CONFIG_HOME: home, AGENT_MAIL_API_KEY: '', AGENT_MAIL_URL: '', NO_COLOR: '1' }
    const login = Bun.spawn([BIN, 'login', '--url', origin], { env, stdout: 'pipe', stderr: 'pipe' })
    const said = await watch(login.stderr).until(/open (\S+)\n/)
    const page = /open (\S+)\n/.exec(said)![1]!
    expect(page).toStartWith(`${origin}/cli/device?user_code=`)
    // the browser: the page, the sign-in of the banner, then approve for the organization
    const opened = await fetch(page)
    const html = await opened.text()
    const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]!
    const submit = (fields: Record<string, string>) =>
      fetch(`${origin}/cli/device`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams({ page_id: hiddenField(html, 'page_id'), csrf_token: hiddenField(html, 'csrf_token'), ...fields }),
      })
    const userCode = new URL(page).searchParams.get('user_code')!
    const signedIn = await submit({ user_code: userCode, email: email!, password: password!, action: 'continue' })
    expect(await signedIn.text()).toContain('Approve this device?')
    expect((await submit({ action: 'approve', org_id: orgId })).status).toBe(200)
    expect(await login.exited).toBe(0)
    const run = async (args: string[]) => {
      const p = Bun.spawn([BIN, ...args], { env, stdout: 'pipe', stderr: 'pipe' })
      const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited])
      return { stdout, code }
    }
    const me = await run(['whoami', '--json'])
    expect(me.code).toBe(0)
    expect(JSON.parse(me.stdout)).toMatchObject({ org_id: orgId, role: 'owner' })
    const mail = await run(['mail', 'list', '--json'])
    expect({ code: mail.code, mail: JSON.parse(mail.stdout) }).toEqual({ code: 0, mail: [] })
  }, 60_000)

  test('the console signs in with the printed sign-in and shows a message sent over SMTP', async () => {
    const [, email, password] = /Sign in +(\S+) with password (\S+)/.exec(out.text)!
    const key = /API key +(\S+)/.exec(out.text)![1]!
    const smtpPort = Number(/SMTP +\S+?:(\d+)/.exec(out.text)![1])
    expect(out.text).toContain(`Console      ${origin}/console`)
    const inbox = await fetch(`${origin}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{}',
    })
    const { id, address } = ((await inbox.json()) as { data: { id: string; address: string } }).data
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true })
    await transport.sendMail({ from: 'you@example.com', to: address, subject: 'Hello console', text: 'Are you there?' })
    transport.close()
    // the browser: the sign-in form with its cookie, then the session cookie
    const form = await fetch(`${origin}/console/sign-in`)
    const formCookie = (form.headers.get('set-cookie') ?? '').split(';')[0]!
    const signedIn = await fetch(`${origin}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: formCookie },
      body: new URLSearchParams({ csrf_token: hiddenField(await form.text(), 'csrf_token'), email: email!, password: password! }).toString(),
    })
    expect(signedIn.status).toBe(303)
    const session = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!
    const mail = await fetch(`${origin}/console/inboxes/${id}`, { headers: { cookie: session } })
    expect(mail.status).toBe(200)
    expect(await mail.text()).toContain('Hello console')
  })

  test('the log is short lines for a person, and quiet while nothing happens (no line per routine job)', async () => {
    // the wake scheduler runs every 10 s: wait past one round after the banner
    await Bun.sleep(Math.max(0, bannerAt + 11_000 - Date.now()))
    const log = out.text.split('\n').filter(l => /^\d\d:\d\d:\d\d /.test(l))
    // the start (a dozen lines) and the login test's requests, one line each; the first run's log was 229 lines
    expect(log.length).toBeGreaterThan(3)
    expect(log.length).toBeLessThan(40)
    expect(out.text).not.toMatch(/^\{/m)
    expect(out.text).toContain(' api listening port=')
    expect(out.text).not.toContain('wake.schedule done')
    expect(out.text).not.toContain('migration applied')
  }, 30_000)

  test("SIGINT to make's own process stops the service; make reset deletes the data directory and nothing else", async () => {
    expect(await reachable()).toBe(true)
    make.kill('SIGINT')
    const timer = setTimeout(() => make.kill('SIGKILL'), 20_000)
    const code = await make.exited
    clearTimeout(timer)
    expect(make.signalCode ?? code).not.toBe('SIGKILL')
    expect(await out.all()).toContain('shutting down signal="SIGINT to make"')
    expect(await reachable()).toBe(false)
    const beside = join(dir, 'keep.txt')
    writeFileSync(beside, 'mine')
    const reset = Bun.spawnSync(['make', '-s', 'reset'], { cwd: REPO, env: devEnv({ DATA_DIR: dataDir }) })
    expect(reset.exitCode).toBe(0)
    expect(existsSync(dataDir)).toBe(false)
    expect(existsSync(beside)).toBe(true)
    expect(existsSync(join(REPO, 'Makefile'))).toBe(true)
  }, 40_000)
})
