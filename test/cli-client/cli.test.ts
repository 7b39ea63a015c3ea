/**
 * The CLI as a user runs it: a subprocess against the service listening on a loopback port,
 * with an SMTP listener and a relay. The device login is approved in the "browser" by the test;
 * mail for `tail` arrives over SMTP.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { createApp } from '../../src/app'
import { createContext, type AppContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { memoryResolver } from '../../src/dns/resolver'
import { inboundHooks } from '../../src/mail/inbound/smtp-hooks'
import { smtpOptions } from '../../src/roles'
import { relayOf } from '../../src/sending/relay'
import { startSmtpServer } from '../../src/smtp/server'
import { TEST_SECRET, testApp, testConfig, testSql, type TestApp } from '../helpers/app'
import { managedAddress } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { decideInBrowser } from '../helpers/identity'
import { person, type Person } from '../oauth/helpers'

const MAIN = join(import.meta.dir, '../../src/cli-client/main.ts')

let relay: TestRelay
let ctx: AppContext
let origin: string
let server: { stop(force?: boolean): unknown }
let smtp: Awaited<ReturnType<typeof startSmtpServer>>
let browser: TestApp
let who: Person
let inbox: string
let home: string

interface Run {
  code: number
  stdout: string
  stderr: string
}

function spawn(args: string[], opts: { stdin?: string; env?: Record<string, string> } = {}) {
  return Bun.spawn(['bun', MAIN, ...args], {
    env: { ...process.env, XDG_CONFIG_HOME: home, AGENT_MAIL_URL: origin, NO_COLOR: '1', AGENT_MAIL_API_KEY: '', ...opts.env },
    stdin: opts.stdin === undefined ? 'ignore' : new Blob([opts.stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
  })
}

async function cli(args: string[], opts: { stdin?: string; env?: Record<string, string> } = {}): Promise<Run> {
  const p = spawn(args, opts)
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, stdout, stderr }
}

/** Reads a stream until `pattern` shows up; returns what was read. */
async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<string> {
  const reader = stream.getReader()
  let text = ''
  while (!pattern.test(text)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`stream ended before ${pattern}: ${text}`)
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return text
}

async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

beforeAll(async () => {
  relay = await startTestRelay()
  const port = await freePort()
  origin = `http://127.0.0.1:${port}`
  ctx = createContext(
    testConfig({ PUBLIC_URL: origin, SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000', SMTP_HOSTNAME: 'mx.test.local', SMTP_PORT: '0', HOST: '127.0.0.1' }),
    await testSql(),
    new ServerKeys(TEST_SECRET),
    { resolver: memoryResolver({}) },
  )
  server = createApp(ctx).listen({ port, hostname: '127.0.0.1' })
  smtp = await startSmtpServer(smtpOptions(ctx.config), inboundHooks(ctx))
  browser = await testApp()
  who = await person('owner')
  inbox = await managedAddress(ctx, who.orgId)
  home = mkdtempSync(join(tmpdir(), 'agent-mail-cli-'))
})
afterAll(async () => {
  await smtp.stop(1000)
  await server.stop(true)
  await relayOf(ctx).close()
  await relay.stop()
})

describe('agent-mail CLI', () => {
  test('login: the device flow approved in the browser saves a 0600 token that whoami uses', async () => {
    const p = spawn(['login'])
    const text = await readUntil(p.stderr, /code ([A-Z]{4}-[A-Z]{4})/)
    const userCode = /code ([A-Z]{4}-[A-Z]{4})/.exec(text)![1]!
    expect(text).toContain(`${origin}/cli/device`)
    await decideInBrowser(browser, who, userCode, 'approve')
    expect(await p.exited).toBe(0)
    const file = join(home, 'agent-mail', 'credentials.json')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(join(home, 'agent-mail')).mode & 0o777).toBe(0o700)
    const me = await cli(['whoami', '--json'])
    expect(me.code).toBe(0)
    expect(JSON.parse(me.stdout)).toMatchObject({ org_id: who.orgId, user_id: who.userId, auth_method: expect.stringMatching(/oauth/) })
  }, 30_000)

  test('an expired access token is refreshed with the saved refresh token, and the new pair is saved', async () => {
    const file = join(home, 'agent-mail', 'credentials.json')
    const before = JSON.parse(readFileSync(file, 'utf8'))
    writeFileSync(file, JSON.stringify({ ...before, expires_at: Date.now() - 1000 }), { mode: 0o600 })
    const me = await cli(['whoami', '--json'])
    expect(me.code).toBe(0)
    const after = JSON.parse(readFileSync(file, 'utf8'))
    expect(after.access_token).not.toBe(before.access_token)
    expect(after.refresh_token).not.toBe(before.refresh_token)
    expect(after.expires_at).toBeGreaterThan(Date.now())
  })

  test('inboxes: an aligned table for people, JSON for scripts', async () => {
    const human = await cli(['inboxes'])
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/^address\s+name\s+created\s+id/m)
    expect(human.stdout).toContain(inbox)
    const json = await cli(['inboxes', 'list', '--json'])
    expect(JSON.parse(json.stdout).map((i: { address: string }) => i.address)).toContain(inbox)
  })

  test('send: the body from stdin, an attachment from a path; --json output parsed', async () => {
    const attachment = join(home, 'report.txt')
    writeFileSync(attachment, 'quarterly numbers')
    const before = relay.messages.length
    const sent = await cli(['send', '--json', '--from', inbox, '--to', 'alice@example.com', '--subject', 'Report', '--attach', attachment], { stdin: 'Here is the report.\n' })
    expect(sent.stderr).toBe('')
    expect(sent.code).toBe(0)
    expect(JSON.parse(sent.stdout)).toMatchObject({ status: 'queued', accepted: ['alice@example.com'], idempotent_replay: false })
    expect(relay.messages.length - before).toBe(1)
    const raw = relay.messages.at(-1)!.raw
    expect(raw).toContain('report.txt')
    expect(raw).toContain(Buffer.from('quarterly numbers').toString('base64'))
  })

  test('tail follows the long-poll and prints a message delivered over SMTP', async () => {
    const p = spawn(['tail', '--json', '--max', '1', '--address', inbox])
    await readUntil(p.stderr, /Waiting for mail/)
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true, name: 'client.sender.example' })
    await transport.sendMail({ from: 'Sam <sam@sender.example>', to: inbox, subject: 'Over SMTP', text: 'hello through the wire' })
    transport.close()
    expect(await p.exited).toBe(0)
    const line = JSON.parse((await new Response(p.stdout).text()).trim())
    expect(line).toMatchObject({ subject: 'Over SMTP', direction: 'inbound', from: { address: 'sam@sender.example' } })
    const read = await cli(['read', line.id])
    expect(read.code).toBe(0)
    expect(read.stdout).toContain('Subject: Over SMTP')
    expect(read.stdout).toContain('hello through the wire')
  }, 30_000)

  test('a bad API key: the service\'s message on stderr and exit code 3', async () => {
    const res = await cli(['whoami', '--api-key', 'svc_not_a_real_key'])
    expect(res.code).toBe(3)
    expect(res.stdout).toBe('')
    expect(res.stderr).toContain('error: authorization: missing or invalid bearer credential (unauthorized)')
  })

  test('not found is exit 4; a usage error is exit 2; an unreachable service is exit 6', async () => {
    const missing = await cli(['read', crypto.randomUUID()])
    expect(missing.code).toBe(4)
    expect(missing.stderr).toContain('(not_found)')
    expect((await cli(['send', '--subject', 'x'])).code).toBe(2)
    expect((await cli(['whoami', '--url', 'http://127.0.0.1:9'])).code).toBe(6)
  })

  test('--help works on every command', async () => {
    for (const args of [[], ['login'], ['signup'], ['whoami'], ['inboxes'], ['inboxes', 'create'], ['send'], ['tail'], ['read'], ['webhooks'], ['webhooks', 'create'], ['functions'], ['functions', 'deploy'], ['functions', 'logs']]) {
      const res = await cli([...args, '--help'])
      expect({ args, code: res.code }).toEqual({ args, code: 0 })
      expect(res.stdout).toStartWith('Usage: agent-mail')
    }
  })
})
