/**
 * `agent-mail send` held by an approval policy, then `agent-mail drafts` as a subprocess: the
 * list of what waits, show, approve (the relay receives it) and reject with a reason.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { managedAddress } from '../helpers/mail'
import { cliService, type CliService } from './helpers'

let s: CliService
let org: TestOrg
let from: string

beforeAll(async () => {
  s = await cliService()
  org = await createOrg()
  from = await managedAddress(s.ctx, org.orgId)
  const res = await fetch(`${s.origin}/v1/approval-policies/${from}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ approval_required: true }),
  })
  expect(res.status).toBe(200)
})
afterAll(() => s.stop())

const cli = (args: string[]) => s.cli(args, { env: { AGENT_MAIL_API_KEY: org.key } })
const unique = () => crypto.randomUUID().slice(0, 8)

async function held(subject: string): Promise<string> {
  const sent = await cli(['send', '--from', from, '--to', 'bob@example.com', '--subject', subject, '--text', 'Please approve'])
  expect(sent.code).toBe(0)
  const id = /^Held for approval: draft ([0-9a-f-]{36});/.exec(sent.stdout)?.[1]
  expect(id).toBeString()
  return id!
}

describe('agent-mail drafts', () => {
  test('a held send is listed, shown, and sent when approved', async () => {
    const subject = `CLI approve ${unique()}`
    const id = await held(subject)
    expect(s.relay.messages.filter(m => m.raw.includes(subject))).toHaveLength(0)
    const list = await cli(['drafts'])
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(/^status\s+from\s+to\s+subject\s+created\s+id\s*$/m)
    expect(list.stdout).toMatch(new RegExp(`^pending_approval\\s+${from.replace(/\./g, '\\.')}\\s+bob@example\\.com\\s+${subject}\\s+now\\s+${id}`, 'm'))
    const shown = await cli(['drafts', 'show', id])
    expect(shown.stdout).toContain(`Subject: ${subject}`)
    expect(shown.stdout).toContain('Please approve')
    const approved = await cli(['drafts', 'approve', id])
    expect(approved.code).toBe(0)
    expect(approved.stdout).toMatch(new RegExp(`^Approved ${id}: sent \\(send [0-9a-f-]{36}\\)$`, 'm'))
    expect(s.relay.messages.filter(m => m.raw.includes(subject))).toHaveLength(1)
    expect(JSON.parse((await cli(['drafts', 'show', id, '--json'])).stdout)).toMatchObject({ status: 'sent' })
  })

  test('reject keeps the reason; approving a rejected draft fails with the conflict', async () => {
    const id = await held(`CLI reject ${unique()}`)
    const rejected = await cli(['drafts', 'reject', id, '--reason', 'not now'])
    expect(rejected).toMatchObject({ code: 0, stdout: `Rejected ${id}: not now\n` })
    expect(JSON.parse((await cli(['drafts', '--status', 'rejected', '--json'])).stdout).map((d: { id: string }) => d.id)).toContain(id)
    const again = await cli(['drafts', 'approve', id])
    expect(again.code).not.toBe(0)
    expect(again.stderr).toContain('conflict')
  })
})
