/**
 * `agent-mail signup` as a subprocess: the emailed code (read back from the outbox) and the
 * password typed at its prompts on stdin, prompts on stderr so that --json output stays JSON,
 * the login it saves, and the service's refusal of a wrong code.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { lastCode, newEmail, wrongCode } from '../helpers/identity'
import { BIN, cliService, watch, type CliService } from './helpers'

let s: CliService
const PASSWORD = 'a long enough password'

beforeAll(async () => {
  // no relay: the verification mail stays in the local outbox, where the test reads its code
  s = await cliService({ outbox: true })
})
afterAll(() => s.stop())

/** A config directory of its own, so each signup's saved login is its own. */
const freshHome = () => mkdtempSync(join(tmpdir(), 'agent-mail-signup-'))

/** Starts a signup and answers its prompts: the code from the mail, then the password. */
async function signup(email: string, home: string, extra: string[] = []) {
  const p = s.spawn(['signup', '--email', email, '--accept-terms', ...extra], { stdin: 'pipe', env: { XDG_CONFIG_HOME: home } })
  const stdin = p.stdin as import('bun').FileSink
  const stderr = watch(p.stderr as ReadableStream)
  await stderr.until(/Verification code:/)
  stdin.write(`${await lastCode(email)}\n`)
  stdin.flush()
  await stderr.until(/Choose a password/)
  stdin.write(`${PASSWORD}\n`)
  stdin.end()
  const [stdout, code] = await Promise.all([new Response(p.stdout as ReadableStream).text(), p.exited])
  return { code, stdout, stderr: await stderr.all() }
}

describe('agent-mail signup', () => {
  test('--json: the prompts on stderr, the new organization and inbox as JSON on stdout; the saved login works', async () => {
    const email = newEmail('cli')
    const home = freshHome()
    const run = await signup(email, home, ['--name', 'Ada', '--org-name', 'Ada Co', '--json'])
    expect(run.code).toBe(0)
    expect(run.stderr).toContain(`A verification code was sent to ${email}.`)
    expect(run.stderr).not.toContain(PASSWORD)
    const out = JSON.parse(run.stdout)
    expect(out).toEqual({
      org_id: expect.any(String),
      user_id: expect.any(String),
      inbox: expect.objectContaining({ address: expect.stringContaining('@agents.test.local') }),
    })
    const file = join(home, 'agent-mail', 'credentials.json')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const me = await s.cli(['whoami', '--json'], { env: { XDG_CONFIG_HOME: home } })
    expect(me.code).toBe(0)
    expect(JSON.parse(me.stdout)).toMatchObject({ org_id: out.org_id, user_id: out.user_id })
    const inboxes = await s.cli(['inboxes', '--json'], { env: { XDG_CONFIG_HOME: home } })
    expect(JSON.parse(inboxes.stdout).map((i: { address: string }) => i.address)).toEqual([out.inbox.address])
  }, 30_000)

  test('for people: a sentence naming the organization and the inbox', async () => {
    const run = await signup(newEmail('cli'), freshHome())
    expect(run.code).toBe(0)
    expect(run.stdout).toBe('')
    expect(run.stderr).toMatch(/Signed up: organization [0-9a-f-]{36}, inbox \S+@agents\.test\.local\. You are logged in\./)
  }, 30_000)

  test('on a terminal (a pseudo-terminal from script(1)): the code is echoed as typed, the password is not', async () => {
    const email = newEmail('cli')
    const home = freshHome()
    const command = `'${BIN}' signup --email '${email}' --accept-terms`
    const p = Bun.spawn(['script', '-q', '-e', '-c', command, '/dev/null'], {
      env: { ...process.env, XDG_CONFIG_HOME: home, AGENT_MAIL_URL: s.origin, AGENT_MAIL_API_KEY: '', AGENT_MAIL_PASSWORD: '', NO_COLOR: '1' },
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const terminal = watch(p.stdout)
    await terminal.until(/Verification code:/)
    const code = await lastCode(email)
    p.stdin.write(`${code}\r`)
    p.stdin.flush()
    await terminal.until(/Choose a password/)
    p.stdin.write(`${PASSWORD}\r`)
    p.stdin.flush()
    await terminal.until(/Signed up/)
    p.stdin.end()
    expect(await p.exited).toBe(0)
    expect(terminal.text).toContain(`Verification code: ${code}`)
    expect(terminal.text).not.toContain(PASSWORD)
    expect(statSync(join(home, 'agent-mail', 'credentials.json')).mode & 0o777).toBe(0o600)
  }, 30_000)

  test("a wrong code: the service's message and exit 1, nothing saved; no --accept-terms: exit 2 before anything is sent", async () => {
    const email = newEmail('cli')
    const home = freshHome()
    const p = s.spawn(['signup', '--email', email, '--accept-terms', '--password', PASSWORD], { stdin: 'pipe', env: { XDG_CONFIG_HOME: home } })
    const watched = watch(p.stderr as ReadableStream)
    await watched.until(/Verification code:/)
    const stdin = p.stdin as import('bun').FileSink
    stdin.write(`${wrongCode(await lastCode(email))}\n`)
    stdin.end()
    const [stderr, code] = await Promise.all([watched.all(), p.exited])
    expect(code).toBe(1)
    expect(stderr).toContain('\nerror: verification_code: is incorrect; 4 attempts left (validation_error)\n')
    expect(existsSync(join(home, 'agent-mail', 'credentials.json'))).toBe(false)

    const other = newEmail('cli')
    const refused = await s.cli(['signup', '--email', other])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('signup needs --accept-terms')
  }, 30_000)
})
