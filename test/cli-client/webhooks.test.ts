/**
 * `agent-mail webhooks` as a subprocess: create, list (a table, and JSON), test (a signed event
 * the receiver really gets), delete; and a plan's refusal shown with its docs_url.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { cliService, type CliService } from './helpers'

let s: CliService
let receiver: Receiver
let org: TestOrg

beforeAll(async () => {
  // the receiver listens on loopback, which webhook URLs may name only with this switch
  s = await cliService({ env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } })
  receiver = startReceiver()
  org = await createOrg()
})
afterAll(async () => {
  receiver.stop()
  await s.stop()
})

const cli = (args: string[], key = org.key) => s.cli(args, { env: { AGENT_MAIL_API_KEY: key } })

describe('agent-mail webhooks', () => {
  test('create, list, test, delete', async () => {
    const none = await cli(['webhooks'])
    expect(none).toMatchObject({ code: 0, stdout: 'No webhook endpoints: add one with `agent-mail webhooks create <url>`.\n' })

    const url = receiver.url('/inbound')
    const created = await cli(['webhooks', 'create', url])
    expect(created.code).toBe(0)
    const id = /^Created ([0-9a-f-]{36}) → (\S+)$/m.exec(created.stdout)
    expect(id?.[2]).toBe(url)
    const endpointId = id![1]!
    const second = await cli(['webhooks', 'create', receiver.url('/spare'), '--disabled', '--json'])
    expect(second.code).toBe(0)
    const spare = JSON.parse(second.stdout)
    expect(spare).toMatchObject({ url: receiver.url('/spare'), enabled: false })

    const table = await cli(['webhooks', 'list'])
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/^url\s+enabled\s+domain\s+created\s+id\s*$/m)
    expect(table.stdout).toMatch(new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\s+yes\\s+all \\(fallback\\)\\s+now\\s+${endpointId}`, 'm'))
    expect(table.stdout).toMatch(new RegExp(`\\s+no\\s+all \\(fallback\\)\\s+now\\s+${spare.id}`))
    expect(
      JSON.parse((await cli(['webhooks', '--json'])).stdout)
        .map((e: { id: string }) => e.id)
        .sort(),
    ).toEqual([endpointId, spare.id].sort())

    const tested = await cli(['webhooks', 'test', endpointId, '--json'])
    expect(tested.code).toBe(0)
    const result = JSON.parse(tested.stdout)
    expect(result).toMatchObject({ status: 200, body: 'ok', error: null })
    const [hit] = receiver.requests.filter(r => r.path === '/inbound')
    expect(hit!.json).toMatchObject({ id: result.event_id, event: 'email.received', test: true })
    expect(hit!.headers['service-signature']).toBe(result.signature)
    const human = await cli(['webhooks', 'test', endpointId])
    expect(human.stdout).toMatch(/^status\s+200\s*$/m)
    expect(receiver.requests.filter(r => r.path === '/inbound')).toHaveLength(2)

    const deleted = await cli(['webhooks', 'delete', endpointId])
    expect(deleted).toMatchObject({ code: 0, stdout: `Deactivated ${endpointId}\n` })
    expect(JSON.parse((await cli(['webhooks', '--json'])).stdout).map((e: { id: string }) => e.id)).toEqual([spare.id])
    const again = await cli(['webhooks', 'delete', endpointId])
    expect(again.code).toBe(4)
    expect(again.stderr).toContain('(not_found)')
  }, 30_000)

  test("a refusal of the plan: the service's message, its code and docs_url, exit 1", async () => {
    const free = await createOrg({ plan: 'free' })
    const res = await cli(['webhooks', 'create', receiver.url('/free'), '--domain-id', crypto.randomUUID()], free.key)
    expect(res.code).toBe(1)
    expect(res.stdout).toBe('')
    expect(res.stderr).toContain('error: domain_id: per-domain endpoints are not included in the free plan')
    expect(res.stderr).toContain('(feature_disabled)')
    expect(res.stderr).toMatch(/^docs: https?:\/\/\S+$/m)
    // --json: the error envelope itself, on stderr
    const json = await cli(['webhooks', 'create', receiver.url('/free'), '--domain-id', crypto.randomUUID(), '--json'], free.key)
    expect(JSON.parse(json.stderr).error).toMatchObject({
      code: 'feature_disabled',
      details: { missing_entitlement: 'webhooks_per_domain', docs_url: expect.stringMatching(/^https?:\/\//) },
    })
  })
})
