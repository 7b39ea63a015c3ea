/**
 * `agent-mail mail list`: the mail of the organization, newest first, with the filters of
 * GET /v1/emails, as lines for people and JSON for scripts; bad options are usage errors and
 * another organization's inbox is not found.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { cliService, type CliService } from './helpers'

let s: CliService
let org: TestOrg
let first: { id: string; address: string }
let second: { id: string; address: string }
const cli = (args: string[]) => s.cli(args, { env: { AGENT_MAIL_API_KEY: org.key } })
const subjects = (stdout: string) => (JSON.parse(stdout) as { subject: string }[]).map(e => e.subject)

beforeAll(async () => {
  s = await cliService()
  org = await createOrg()
  first = JSON.parse((await cli(['inboxes', 'create', '--json'])).stdout)
  second = JSON.parse((await cli(['inboxes', 'create', '--json'])).stdout)
  for (const subject of ['one', 'two', 'three']) {
    await s.smtp({ from: 'Sam <sam@sender.example>', to: first.address, subject, text: subject })
    await Bun.sleep(5) // distinct received_at, so newest first is a fixed order
  }
  await s.smtp({ from: 'sam@sender.example', to: second.address, subject: 'elsewhere', text: '.' })
  const sent = await cli(['send', '--from', first.address, '--to', 'alice@example.com', '--subject', 'outgoing', '--text', 'hi'])
  expect(sent.code).toBe(0)
})
afterAll(() => s.stop())

describe('agent-mail mail list', () => {
  test('everything, newest first, as JSON', async () => {
    const res = await cli(['mail', 'list', '--json'])
    expect(res.code).toBe(0)
    expect(subjects(res.stdout)).toEqual(['outgoing', 'elsewhere', 'three', 'two', 'one'])
  })

  test('filters: by address, by inbox, by direction; --limit reads across pages and stops there', async () => {
    expect(subjects((await cli(['mail', 'list', '--json', '--address', second.address])).stdout)).toEqual(['elsewhere'])
    expect(subjects((await cli(['mail', 'list', '--json', '--inbox', first.id, '--direction', 'inbound'])).stdout)).toEqual(['three', 'two', 'one'])
    expect(subjects((await cli(['mail', 'list', '--json', '--direction', 'outbound'])).stdout)).toEqual(['outgoing'])
    expect(subjects((await cli(['mail', 'list', '--json', '--limit', '2'])).stdout)).toEqual(['outgoing', 'elsewhere'])
  })

  test('for people: one line per message (`mail` alone lists), and a word when there is none', async () => {
    const res = await cli(['mail', '--address', first.address, '--direction', 'inbound'])
    expect(res.code).toBe(0)
    const lines = res.stdout.trim().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/ {2}Sam <sam@sender\.example> {2}three {2}[0-9a-f-]{36}$/)
    const none = await cli(['mail', 'list', '--since', new Date(Date.now() + 60_000).toISOString()])
    expect(none.stdout).toBe('No mail.\n')
  })

  test('bad options are usage errors (exit 2); a bad value the service refuses names its field; another organization is not found (exit 4)', async () => {
    const direction = await cli(['mail', 'list', '--direction', 'sideways'])
    expect({ code: direction.code, stderr: direction.stderr }).toEqual({ code: 2, stderr: 'error: --direction: must be inbound or outbound\n' })
    expect((await cli(['mail', 'list', '--limit', '0'])).code).toBe(2)
    const since = await cli(['mail', 'list', '--since', 'yesterday'])
    expect(since.code).toBe(1)
    expect(since.stderr).toContain('since: ')
    expect(since.stderr).toContain('(validation_error)')
    const other = await createOrg()
    const theirs = JSON.parse((await s.cli(['inboxes', 'create', '--json'], { env: { AGENT_MAIL_API_KEY: other.key } })).stdout)
    const res = await cli(['mail', 'list', '--inbox', theirs.id])
    expect(res.code).toBe(4)
    expect(res.stderr).toContain('(not_found)')
  })
})
