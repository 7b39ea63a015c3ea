/**
 * The CLI as a user runs it (bin/agent-mail as a subprocess) against the service on a loopback
 * port: the device login approved in the "browser" by the test, sending, `tail` printing mail
 * delivered over SMTP, output for people and for scripts, exit codes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { testApp, testSql, type TestApp } from '../helpers/app'
import { managedAddress } from '../helpers/mail'
import { decideInBrowser } from '../helpers/identity'
import { person, type Person } from '../oauth/helpers'
import type { Command } from 'commander'
import { buildProgram } from '../../src/cli-client/main'
import { BIN, cliService, readUntil, type CliService } from './helpers'

let s: CliService
let browser: TestApp
let who: Person
let inbox: string
const cli = (...args: Parameters<CliService['cli']>) => s.cli(...args)

beforeAll(async () => {
  s = await cliService()
  browser = await testApp()
  who = await person('owner')
  inbox = await managedAddress(s.ctx, who.orgId)
})
afterAll(() => s.stop())

describe('agent-mail CLI', () => {
  test('login: the device flow approved in the browser saves a 0600 token that whoami uses', async () => {
    const p = s.spawn(['login'])
    const text = await readUntil(p.stderr as ReadableStream, /code ([A-Z]{4}-[A-Z]{4})/)
    const userCode = /code ([A-Z]{4}-[A-Z]{4})/.exec(text)![1]!
    expect(text).toContain(`${s.origin}/cli/device`)
    await decideInBrowser(browser, who, userCode, 'approve')
    expect(await p.exited).toBe(0)
    const file = join(s.home, 'agent-mail', 'credentials.json')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(join(s.home, 'agent-mail')).mode & 0o777).toBe(0o700)
    const me = await cli(['whoami', '--json'])
    expect(me.code).toBe(0)
    expect(JSON.parse(me.stdout)).toMatchObject({ org_id: who.orgId, user_id: who.userId, auth_method: expect.stringMatching(/oauth/) })
  }, 30_000)

  test('an expired access token is refreshed with the saved refresh token, and the new pair is saved', async () => {
    const file = join(s.home, 'agent-mail', 'credentials.json')
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
    const attachment = join(s.home, 'report.txt')
    writeFileSync(attachment, 'quarterly numbers')
    const before = s.relay.messages.length
    const sent = await cli(['send', '--json', '--from', inbox, '--to', 'alice@example.com', '--subject', 'Report', '--attach', attachment], {
      stdin: 'Here is the report.\n',
    })
    expect(sent.stderr).toBe('')
    expect(sent.code).toBe(0)
    expect(JSON.parse(sent.stdout)).toMatchObject({ status: 'queued', accepted: ['alice@example.com'], idempotent_replay: false })
    expect(s.relay.messages.length - before).toBe(1)
    const raw = s.relay.messages.at(-1)!.raw
    expect(raw).toContain('report.txt')
    expect(raw).toContain(Buffer.from('quarterly numbers').toString('base64'))
  })

  test('send --async: answered once committed (Prefer: respond-async), relayed after', async () => {
    const before = s.relay.messages.length
    const sent = await cli(['send', '--async', '--from', inbox, '--to', 'bob@example.com', '--subject', 'Later', '--text', 'hi'])
    expect(sent.code).toBe(0)
    expect(sent.stdout).toMatch(/^Accepted \(relayed after the answer\): [0-9a-f-]{36} to bob@example\.com$/m)
    expect((await s.relay.waitFor(before + 1)).at(-1)!.to).toEqual(['bob@example.com'])
  })

  test('send on a terminal draws an upload progress bar on stderr (in a pseudo-terminal from script(1))', async () => {
    const attachment = join(s.home, 'big.bin')
    writeFileSync(attachment, Buffer.alloc(300_000, 7))
    const before = s.relay.messages.length
    const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`
    const command = [BIN, 'send', '--from', inbox, '--to', 'alice@example.com', '--subject', 'Big', '--text', 'attached', '--attach', attachment]
      .map(quote)
      .join(' ')
    const p = Bun.spawn(['script', '-q', '-e', '-c', command, '/dev/null'], {
      env: { ...process.env, XDG_CONFIG_HOME: s.home, AGENT_MAIL_URL: s.origin, AGENT_MAIL_API_KEY: '', NO_COLOR: '1' },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [terminal, code] = await Promise.all([new Response(p.stdout).text(), p.exited])
    expect({ code, terminal: code ? terminal : '' }).toEqual({ code: 0, terminal: '' })
    expect(terminal).toMatch(/uploading \[[^\]]*\] \d+% \d+\/\d+ bytes/)
    expect(terminal).toMatch(/Sent: [0-9a-f-]{36} to alice@example\.com/)
    expect(s.relay.messages.length - before).toBe(1)
  })

  test('tail follows the long-poll and prints a message delivered over SMTP', async () => {
    const p = s.spawn(['tail', '--json', '--max', '1', '--address', inbox])
    await readUntil(p.stderr as ReadableStream, /Waiting for mail/)
    await s.smtp({ from: 'Sam <sam@sender.example>', to: inbox, subject: 'Over SMTP', text: 'hello through the wire' })
    expect(await p.exited).toBe(0)
    const line = JSON.parse((await new Response(p.stdout as ReadableStream).text()).trim())
    expect(line).toMatchObject({ subject: 'Over SMTP', direction: 'inbound', from: { address: 'sam@sender.example' } })
    const read = await cli(['read', line.id])
    expect(read.code).toBe(0)
    expect(read.stdout).toContain('Subject: Over SMTP')
    expect(read.stdout).toContain('hello through the wire')
  }, 30_000)

  test('read --new shows the reply without its quoted history', async () => {
    const quoted = 'Yes, Tuesday works.\n\nOn Mon, Nov 23, 2026 at 10:15 AM Alice <alice@example.com> wrote:\n> Can you make Tuesday?\n'
    await s.smtp({ from: 'Sam <sam@sender.example>', to: inbox, subject: 'Re: Tuesday', text: quoted })
    const sql = await testSql()
    const [row] = await sql<{ id: string }[]>`select id from emails where org_id = ${who.orgId} and subject = 'Re: Tuesday'`
    const id = row!.id
    const full = await cli(['read', id])
    expect(full.stdout).toContain('Can you make Tuesday?')
    const fresh = await cli(['read', id, '--new'])
    expect(fresh.code).toBe(0)
    expect(fresh.stdout).toContain('Yes, Tuesday works.')
    expect(fresh.stdout).not.toContain('Can you make Tuesday?')
    expect(fresh.stdout).not.toContain('wrote:')
  }, 30_000)

  test("a bad API key: the service's message on stderr and exit code 3", async () => {
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

  test('--help works on every command the program defines', async () => {
    const paths = (c: Command, prefix: string[] = []): string[][] => [prefix, ...c.commands.flatMap(sub => paths(sub, [...prefix, sub.name()]))]
    const all = paths(buildProgram())
    expect(all.length).toBeGreaterThanOrEqual(17)
    for (const args of all) {
      const res = await cli([...args, '--help'])
      expect({ args, code: res.code }).toEqual({ args, code: 0 })
      expect(res.stdout).toStartWith(`Usage: agent-mail${args.length ? ` ${args.join(' ')}` : ''}`)
    }
  })
})
