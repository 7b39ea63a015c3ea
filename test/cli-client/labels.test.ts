/**
 * `agent-mail mail label` and `agent-mail mail list --label` as a subprocess, on mail received
 * over SMTP: mark read, a custom label on two messages at once, a thread, and the filters.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { managedAddress } from '../helpers/mail'
import { cliService, type CliService } from './helpers'

let s: CliService
let org: TestOrg
let to: string

beforeAll(async () => {
  s = await cliService()
  org = await createOrg()
  to = await managedAddress(s.ctx, org.orgId)
  const res = await fetch(`${s.origin}/v1/labels`, {
    method: 'POST',
    headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'later' }),
  })
  expect(res.status).toBe(201)
})
afterAll(() => s.stop())

const cli = (args: string[]) => s.cli(args, { env: { AGENT_MAIL_API_KEY: org.key } })
const listed = async (args: string[]) =>
  JSON.parse((await cli(['mail', 'list', '--json', ...args])).stdout) as { id: string; thread_id: string; subject: string; labels: string[] }[]

describe('agent-mail mail label', () => {
  test('marks read, labels several messages and a thread; mail list --label filters by all of them', async () => {
    await s.smtp({ from: 'sam@sender.example', to, subject: 'First', text: 'one' })
    await s.smtp({ from: 'sam@sender.example', to, subject: 'Second', text: 'two' })
    const [second, first] = await listed([])
    expect([first!.subject, second!.subject]).toEqual(['First', 'Second'])
    expect(first!.labels).toEqual(['inbound', 'unread'])

    const read = await cli(['mail', 'label', first!.id, '--add', 'read'])
    expect(read).toMatchObject({ code: 0, stdout: `${first!.id}  inbound, read\n` })
    const both = await cli(['mail', 'label', first!.id, second!.id, '--add', 'later'])
    expect(both.code).toBe(0)
    expect(both.stdout.trim().split('\n').sort()).toEqual([`${first!.id}  inbound, later, read`, `${second!.id}  inbound, later, unread`].sort())

    expect((await listed(['--label', 'unread'])).map(e => e.subject)).toEqual(['Second'])
    expect((await listed(['--label', 'later', '--label', 'read'])).map(e => e.subject)).toEqual(['First'])
    expect((await cli(['read', first!.id])).stdout).toContain('Labels:  inbound, later, read')

    const thread = await cli(['mail', 'label', second!.thread_id, '--thread', '--remove', 'later', '--json'])
    expect(JSON.parse(thread.stdout)).toEqual([{ id: second!.id, thread_id: second!.thread_id, labels: ['inbound', 'unread'] }])
  })

  test('without --add or --remove it is a usage error; a bad label is the service validation_error', async () => {
    const none = await cli(['mail', 'label', crypto.randomUUID()])
    expect(none.code).not.toBe(0)
    expect(none.stderr).toContain('give --add or --remove')
    const bad = await cli(['mail', 'label', crypto.randomUUID(), '--add', 'Bad Name'])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toContain('add[0]: must be 1 to 40 lowercase')
  })
})
