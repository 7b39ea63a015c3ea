/**
 * The MCP server through the official SDK's client, in both protocol revisions it serves
 * (2026-07-28 and 2025-11-25): the tool list, one call of each family, and every result's
 * structuredContent checked against the tool's published output schema by ajv, a validator
 * the server does not use for its own checks (it validates with its SDK's default).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import type { Client } from '@modelcontextprotocol/client'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { managedAddress, rfc822 } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { memoryResolver } from '../../src/dns/resolver'
import { ingest } from '../../src/mail/inbound/ingest'
import { relayOf } from '../../src/sending/relay'
import { appFetch, ERAS, mcpClient, toolErrorOf } from './helpers'

let relay: TestRelay
let receiver: Receiver
let t: TestApp
let org: TestOrg
let inbox: string
const unique = () => crypto.randomUUID().slice(0, 8)

const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats(ajv)

async function inbound(to: string, subject: string, attachment?: { name: string; text: string }, owner: TestOrg = org) {
  const boundary = `b${unique()}`
  const headers: Record<string, string> = { From: 'Sam <sam@sender.example>', To: to, Subject: subject, 'Message-ID': `<${unique()}@sender.example>` }
  let body = 'hello from sam'
  if (attachment) {
    headers['MIME-Version'] = '1.0'
    headers['Content-Type'] = `multipart/mixed; boundary="${boundary}"`
    body = [
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'hello from sam',
      `--${boundary}`,
      `Content-Type: text/plain; name="${attachment.name}"`,
      `Content-Disposition: attachment; filename="${attachment.name}"`,
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from(attachment.text).toString('base64'),
      `--${boundary}--`,
      '',
    ].join('\r\n')
  }
  const raw = new TextEncoder().encode(rfc822(headers, body))
  const result = await ingest(t.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo: [to], remoteIp: '192.0.2.1', helo: 'sender.example', tls: false })
  return result.stored.find(s => s.orgId === owner.orgId)!.id
}

beforeAll(async () => {
  relay = await startTestRelay()
  receiver = startReceiver()
  // a public address for the webhook host; nothing else of DNS is needed. Loopback webhooks reach the receiver.
  t = await testApp(
    { SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000', WEBHOOK_ALLOW_LOOPBACK: 'true' },
    { resolver: memoryResolver({ 'hooks.example.com': { A: ['93.184.216.34'] } }) },
  )
  org = await createOrg()
  inbox = await managedAddress(t.ctx, org.orgId)
})
afterAll(async () => {
  receiver.stop()
  await relayOf(t.ctx).close()
  await relay.stop()
})

for (const { era, version } of ERAS) {
  describe(`MCP ${version}`, () => {
    let client: Client
    const schemas = new Map<string, ReturnType<typeof ajv.compile>>()

    /** the tools whose successful result has been checked against the output schema */
    const validated = new Set<string>()
    const validate = (name: string, value: unknown) => {
      const check = schemas.get(name)!
      if (!check(value)) throw new Error(`${name}: ${ajv.errorsText(check.errors)}`)
      validated.add(name)
      return true
    }
    /** Calls a tool and checks the result: an object structuredContent valid against the output schema and the same JSON as text, or an error as text only. */
    async function call(name: string, args: Record<string, unknown>) {
      const result = (await client.callTool({ name, arguments: args })) as {
        isError?: boolean
        structuredContent?: any
        content: { type: string; text: string }[]
      }
      if (result.isError) return result
      expect(typeof result.structuredContent).toBe('object')
      expect(JSON.parse(result.content[0]!.text)).toEqual(result.structuredContent)
      validate(name, result.structuredContent)
      return result
    }
    const ok = async (name: string, args: Record<string, unknown>) => {
      const result = await call(name, args)
      if (result.isError) throw new Error(`${name}: ${result.content[0]!.text}`)
      return result.structuredContent
    }
    const fails = async (name: string, args: Record<string, unknown>) => {
      const result = await call(name, args)
      expect(result.isError).toBe(true)
      return toolErrorOf(result)
    }

    beforeAll(async () => {
      client = await mcpClient(t, org.key, era)
      expect(client.getNegotiatedProtocolVersion()).toBe(version)
    })
    afterAll(() => client.close())

    test('tools/list: snake_case names in a stable order, each with input and output schemas and all four annotations', async () => {
      const { tools } = await client.listTools()
      const names = tools.map(tool => tool.name)
      expect(names).toEqual([...names].sort())
      expect(names).toEqual(
        expect.arrayContaining([
          'create_inbox',
          'list_inboxes',
          'get_inbox',
          'delete_inbox',
          'list_emails',
          'search_emails',
          'get_email',
          'list_threads',
          'get_thread',
          'wait_for_email',
          'send_email',
          'send_email_batch',
          'reply_to_email',
          'forward_email',
          'get_sent_email',
          'list_sent_emails',
          'reschedule_email',
          'cancel_scheduled_email',
          'create_webhook_endpoint',
          'list_webhook_endpoints',
          'get_webhook_endpoint',
          'update_webhook_endpoint',
          'delete_webhook_endpoint',
          'create_payment_challenge',
          'get_payment_challenge',
          'deploy_function',
          'redeploy_function',
          'list_functions',
          'get_function',
          'list_function_logs',
          'list_function_invocations',
          'get_function_invocation',
          'list_memories',
          'get_memory',
          'set_memory',
          'delete_memory',
          'pay_payment_challenge',
          'get_spend_policy',
          'update_spend_policy',
          'list_payments',
          'list_declined_payments',
          'list_webhook_deliveries',
          'get_webhook_delivery',
          'replay_webhook_delivery',
          'patch_memory',
          'batch_memories',
          'route_function',
          'get_routing_topology',
          'list_function_secrets',
          'set_function_secret',
          'delete_function_secret',
          'list_networks',
          'discover_network_agents',
          'admit_network_agent',
          'list_contacts',
          'get_contact',
          'save_contact',
          'delete_contact',
          'list_address_notes',
          'get_address_note',
          'create_address_note',
          'update_address_note',
          'delete_address_note',
          'list_suppressions',
          'create_suppression',
          'delete_suppression',
        ]),
      )
      for (const tool of tools) {
        expect(tool.name).toMatch(/^[a-z]+(_[a-z]+)*$/)
        expect(tool.inputSchema.type).toBe('object')
        expect(tool.outputSchema?.type).toBe('object')
        for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const)
          expect(typeof tool.annotations?.[hint]).toBe('boolean')
        schemas.set(tool.name, ajv.compile(tool.outputSchema!))
      }
      expect((await client.listTools()).tools.map(tool => tool.name)).toEqual(names)
    })

    test("inboxes: create, list with paging, get, delete; another organization's inbox is not_found", async () => {
      const created = await ok('create_inbox', { local_part: `mcp-${era}-${unique()}`, display_name: 'MCP' })
      expect(created.display_name).toBe('MCP')
      const first = await ok('list_inboxes', { limit: 1 })
      expect(first.items).toHaveLength(1)
      expect(first.total).toBeGreaterThanOrEqual(2)
      const second = await ok('list_inboxes', { limit: 1, cursor: first.cursor })
      expect(second.items[0].id).not.toBe(first.items[0].id)
      expect((await ok('get_inbox', { inbox_id: created.id })).address).toBe(created.address)
      const other = await createOrg()
      const foreign = await managedAddress(t.ctx, other.orgId)
      const foreignId = (await t.request('GET', '/v1/inboxes', { key: other.key })).body.data.find((i: { address: string }) => i.address === foreign).id
      expect((await fails('get_inbox', { inbox_id: foreignId })).code).toBe('not_found')
      expect((await fails('delete_inbox', { inbox_id: foreignId })).code).toBe('not_found')
      const spare = await ok('create_inbox', {})
      expect(await ok('delete_inbox', { inbox_id: spare.id })).toEqual({ id: spare.id, deleted: true })
      expect((await fails('get_inbox', { inbox_id: spare.id })).code).toBe('not_found')
    })

    test('bad arguments are tool errors with validation_error and field: reason', async () => {
      const error = await fails('get_inbox', { inbox_id: 'not-a-uuid' })
      expect(error).toMatchObject({ code: 'validation_error' })
      expect(error.message).toStartWith('inbox_id: ')
      expect((await fails('send_email', { from: inbox, to: 'a@example.com', subject: 's', body_text: 'b' })).message).toContain('idempotency_key: is required')
    })

    test('mail: list, search, read with attachment download URLs (no bytes), threads', async () => {
      const subject = `Invoice ${era} ${unique()}`
      const id = await inbound(inbox, subject, { name: 'invoice.txt', text: `amount due ${era}` })
      const listed = await ok('list_emails', { direction: 'inbound', limit: 5 })
      expect(listed.items.map((e: { id: string }) => e.id)).toContain(id)
      expect((await ok('search_emails', { query: subject })).items.map((e: { id: string }) => e.id)).toEqual([id])
      const email = await ok('get_email', { email_id: id })
      expect(email.subject).toBe(subject)
      expect(email.attachments).toHaveLength(1)
      expect(JSON.stringify(email)).not.toContain(Buffer.from(`amount due ${era}`).toString('base64'))
      const download = await appFetch(t)(email.attachments[0].download_url)
      expect(download.status).toBe(200)
      expect(await download.text()).toBe(`amount due ${era}`)
      expect(new Date(email.links_expire_at).getTime() - Date.now()).toBeLessThanOrEqual(15 * 60 * 1000)
      expect((await appFetch(t)(email.raw_url)).status).toBe(200)
      const thread = await ok('get_thread', { thread_id: email.thread_id })
      expect(thread.emails.map((e: { id: string }) => e.id)).toContain(id)
      expect((await ok('list_threads', { limit: 50 })).items.map((th: { id: string }) => th.id)).toContain(email.thread_id)
    })

    test('labels: create, list, label a message, a batch and a thread, filter the list by label, delete', async () => {
      const name = `mcp-${era.replaceAll('-', '')}`
      expect(await ok('create_label', { name })).toMatchObject({ name, system: false, created: true })
      expect((await ok('list_labels', {})).items.map((l: { name: string }) => l.name)).toContain(name)
      const id = await inbound(inbox, `Labeled ${era} ${unique()}`)
      expect((await ok('label_email', { email_id: id, add: [name, 'read'] })).labels).toEqual(['inbound', name, 'read'].sort())
      expect((await ok('list_emails', { label: [name] })).items.map((e: { id: string }) => e.id)).toEqual([id])
      expect((await ok('label_emails', { ids: [id], add: ['unread'] })).emails[0].labels).toEqual(['inbound', name, 'unread'].sort())
      const threadId = (await ok('get_email', { email_id: id })).thread_id
      expect((await ok('label_thread', { thread_id: threadId, remove: [name] })).labels).toEqual(['inbound', 'unread'])
      expect((await fails('label_email', { email_id: id, add: ['sent'] })).message).toMatch(/^add: sent is set by the service/)
      expect(await ok('delete_label', { name })).toEqual({ name, deleted: true, messages: 0 })
    })

    test('wait_for_email blocks until mail for the address arrives', async () => {
      const since = new Date().toISOString()
      const waiting = ok('wait_for_email', { address: inbox, since, timeout_seconds: 20 })
      const id = await inbound(inbox, `wake ${era}`)
      const woke = await waiting
      expect(woke.timed_out).toBe(false)
      expect(woke.emails.map((e: { id: string }) => e.id)).toContain(id)
      const quiet = await ok('wait_for_email', { address: inbox, since: woke.next_since, timeout_seconds: 1 })
      expect(quiet).toMatchObject({ emails: [], timed_out: true })
    })

    test('send_email: a retry with the same idempotency key returns the first result and sends once', async () => {
      const before = relay.messages.length
      const args = { from: inbox, to: 'alice@example.com', subject: `once ${era} ${unique()}`, body_text: 'hi', idempotency_key: `key-${unique()}` }
      const first = await ok('send_email', args)
      expect(first).toMatchObject({ status: 'queued', idempotent_replay: false })
      const retry = await ok('send_email', args)
      expect(retry).toMatchObject({ id: first.id, idempotent_replay: true })
      expect(relay.messages.length - before).toBe(1)
      // the same key with another payload is a conflict, never a second send
      expect((await fails('send_email', { ...args, body_text: 'changed' })).code).toBe('conflict')
      expect(relay.messages.length - before).toBe(1)
      expect((await ok('get_sent_email', { send_id: first.id })).status).toBe('queued')
      const sent = await ok('list_sent_emails', { limit: 5 })
      expect(sent.items.map((s: { id: string }) => s.id)).toContain(first.id)
    })

    test('send_email_batch: each message sent or refused on its own, the results in order as items', async () => {
      const before = relay.messages.length
      const good = { from: inbox, to: 'alice@example.com', subject: `batch ${era} ${unique()}`, body_text: 'hi' }
      const { items } = await ok('send_email_batch', { messages: [good, { ...good, to: 'not an address' }], idempotency_key: `key-${unique()}` })
      expect(items.map((r: { success: boolean }) => r.success)).toEqual([true, false])
      expect(items[0].data).toMatchObject({ status: 'queued', from: inbox })
      expect(items[1].error.code).toBe('validation_error')
      expect(relay.messages.length - before).toBe(1)
    })

    test('reply_to_email and forward_email thread and quote the original', async () => {
      const id = await inbound(inbox, `question ${era}`, { name: 'q.txt', text: 'attached question' })
      const before = relay.messages.length
      const reply = await ok('reply_to_email', { email_id: id, from: inbox, body_text: 'the answer', idempotency_key: `r-${unique()}` })
      expect(relay.messages.length - before).toBe(1)
      expect(relay.messages.at(-1)!.to).toEqual(['sam@sender.example'])
      expect(relay.messages.at(-1)!.raw).toMatch(/^Subject: Re: question/m)
      expect(reply.thread_id).toBe((await ok('get_email', { email_id: id })).thread_id)
      await ok('forward_email', { email_id: id, from: inbox, to: 'boss@example.com', note: 'FYI', idempotency_key: `f-${unique()}` })
      const forwarded = relay.messages.at(-1)!
      expect(forwarded.to).toEqual(['boss@example.com'])
      expect(forwarded.raw).toMatch(/^Subject: Fwd: question/m)
      expect(forwarded.raw).toContain('q.txt')
    })

    test('scheduled sends: schedule, reschedule, cancel; cancelling twice is not_scheduled', async () => {
      const at = new Date(Date.now() + 3600_000).toISOString()
      const scheduled = await ok('send_email', {
        from: inbox,
        to: 'later@example.com',
        subject: 'later',
        body_text: 'x',
        scheduled_at: at,
        idempotency_key: `s-${unique()}`,
      })
      expect(scheduled.status).toBe('scheduled')
      const moved = await ok('reschedule_email', { send_id: scheduled.id, scheduled_at: new Date(Date.now() + 7200_000).toISOString() })
      expect(moved.status).toBe('scheduled')
      expect((await ok('cancel_scheduled_email', { send_id: scheduled.id })).status).toBe('canceled')
      expect((await fails('cancel_scheduled_email', { send_id: scheduled.id })).code).toBe('not_scheduled')
    })

    test('drafts: create, change, list, get, send, delete; an approval policy holds them until approved or rejected', async () => {
      const subject = `draft ${era} ${unique()}`
      const draft = await ok('create_draft', { from: inbox, to: 'alice@example.com', subject: 'first', body_text: 'x' })
      expect((await ok('update_draft', { draft_id: draft.id, subject })).subject).toBe(subject)
      expect((await fails('update_draft', { draft_id: draft.id })).message).toStartWith('body: ')
      expect((await ok('list_drafts', { status: 'draft' })).items.map((d: { id: string }) => d.id)).toContain(draft.id)
      expect((await ok('get_draft', { draft_id: draft.id })).status).toBe('draft')
      const before = relay.messages.length
      const sent = await ok('send_draft', { draft_id: draft.id })
      expect(sent).toMatchObject({ status: 'sent', send_id: expect.any(String) })
      expect(relay.messages.length - before).toBe(1)
      expect(await ok('delete_draft', { draft_id: draft.id })).toEqual({ id: draft.id, deleted: true })

      const guarded = await managedAddress(t.ctx, org.orgId)
      expect(await ok('set_approval_policy', { address: guarded, approval_required: true })).toMatchObject({ address: guarded, approval_required: true })
      expect((await ok('get_approval_policy', { address: guarded })).approval_required).toBe(true)
      expect((await ok('list_approval_policies', {})).items.map((p: { address: string }) => p.address)).toContain(guarded)
      const held = await ok('send_email', { from: guarded, to: 'bob@example.com', subject: `held ${subject}`, body_text: 'x', idempotency_key: unique() })
      expect(held.status).toBe('pending_approval')
      expect((await ok('create_draft_approval_link', { draft_id: held.draft_id })).url).toContain('/drafts/approval?token=')
      expect(await ok('reject_draft', { draft_id: held.draft_id, reason: 'no' })).toMatchObject({ status: 'rejected', rejection_reason: 'no' })
      const other = await ok('create_draft', { from: guarded, to: 'bob@example.com', subject: `other ${subject}`, body_text: 'x' })
      expect((await ok('send_draft', { draft_id: other.id })).status).toBe('pending_approval')
      expect((await ok('approve_draft', { draft_id: other.id })).status).toBe('sent')
      expect(relay.messages.length - before).toBe(2)
      await ok('set_approval_policy', { address: guarded, approval_required: false })
    })

    test('webhook endpoints: create, list, get, update, delete; a private URL is validation_error', async () => {
      expect((await fails('create_webhook_endpoint', { url: 'https://10.0.0.1/hook' })).code).toBe('validation_error')
      const endpoint = await ok('create_webhook_endpoint', { url: `https://hooks.example.com/${era}`, is_route_target: true })
      expect((await ok('list_webhook_endpoints', {})).items.map((e: { id: string }) => e.id)).toContain(endpoint.id)
      expect((await ok('get_webhook_endpoint', { endpoint_id: endpoint.id })).url).toBe(endpoint.url)
      expect((await ok('update_webhook_endpoint', { endpoint_id: endpoint.id, enabled: false })).enabled).toBe(false)
      expect((await ok('delete_webhook_endpoint', { endpoint_id: endpoint.id })).deactivated_at).toBeString()
      expect((await fails('get_webhook_endpoint', { endpoint_id: endpoint.id })).code).toBe('not_found')
    })

    test('functions: deploy (a broken module reports where), list, get, logs, invocations', async () => {
      const name = `fn-${era}-${unique()}`
      const deployed = await ok('deploy_function', {
        name,
        code: 'export default { async fetch(request, env) { console.log("hi"); return new Response("ok") } }',
      })
      expect(deployed).toMatchObject({ name, deploy_status: 'deployed', deployment: { status: 'deployed' } })
      const broken = await ok('redeploy_function', { function_id: deployed.id, code: 'export default { async fetch( {' })
      expect(broken.deployment.status).toBe('failed')
      expect(broken.deployment.deploy_error.name).toBe('SyntaxError')
      expect((await ok('list_functions', {})).items.map((f: { id: string }) => f.id)).toContain(deployed.id)
      expect((await ok('get_function', { function_id: deployed.id })).current_deployment_id).toBe(deployed.deployment.id)
      expect((await ok('list_function_logs', { function_id: deployed.id })).items).toEqual([])
      expect((await ok('list_function_invocations', { function_id: deployed.id })).total).toBe(0)
      expect((await fails('get_function_invocation', { function_id: deployed.id, invocation_id: crypto.randomUUID() })).code).toBe('not_found')
      expect((await fails('deploy_function', { name, code: 'export default {}' })).code).toBe('conflict')
    })

    test('memories: set, get, list by prefix, optimistic concurrency, delete', async () => {
      const key = `mcp/${era}/${unique()}`
      const first = await ok('set_memory', { key, value: { step: 1 }, metadata: { by: 'test' } })
      expect(first).toMatchObject({ key, value: { step: 1 } })
      const second = await ok('set_memory', { key, value: { step: 2 }, if_version: first.version })
      expect((await fails('set_memory', { key, value: { step: 3 }, if_version: first.version })).code).toBe('precondition_failed')
      expect((await ok('get_memory', { key })).value).toEqual({ step: 2 })
      const listed = await ok('list_memories', { prefix: `mcp/${era}/`, include_values: true })
      expect(listed.items.find((m: { key: string }) => m.key === key).value).toEqual({ step: 2 })
      expect(await ok('delete_memory', { key, if_version: second.version })).toMatchObject({ key, deleted: true })
      expect((await fails('get_memory', { key })).code).toBe('not_found')
    })

    test('webhook deliveries: list by email, get, replay with the original event id', async () => {
      // an organization of its own: one org-wide fallback endpoint each
      const owner = await createOrg()
      const address = await managedAddress(t.ctx, owner.orgId)
      const own = await mcpClient(t, owner.key, era)
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = (await own.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent: any }
        if (!result.isError) expect(validate(name, result.structuredContent)).toBe(true)
        return result
      }
      const path = `/deliveries-${era}-${unique()}`
      const endpoint = (await call('create_webhook_endpoint', { url: receiver.url(path) })).structuredContent
      expect(endpoint.domain_id).toBeNull()
      const emailId = await inbound(address, `delivered ${era}`, undefined, owner)
      const listed = (await call('list_webhook_deliveries', { email_id: emailId })).structuredContent
      expect(listed.items).toHaveLength(1)
      const delivery = listed.items[0]
      expect(delivery).toMatchObject({ email_id: emailId, endpoint_id: endpoint.id, event_type: 'email.received', status: 'pending' })
      expect((await call('get_webhook_delivery', { delivery_id: delivery.id })).structuredContent.event_id).toBe(delivery.event_id)
      const replayed = (await call('replay_webhook_delivery', { delivery_id: delivery.id })).structuredContent
      expect(replayed).toEqual({ delivered: 1, failed: 0 })
      const received = receiver.requests.filter(r => r.path === path)
      expect(received).toHaveLength(1)
      expect(received[0]!.json.id).toBe(delivery.event_id)
      expect((await call('get_webhook_delivery', { delivery_id: delivery.id })).structuredContent.status).toBe('delivered')
      // the organization of the tests sees none of it
      expect((await fails('get_webhook_delivery', { delivery_id: delivery.id })).code).toBe('not_found')
      expect((await fails('replay_webhook_delivery', { delivery_id: delivery.id })).code).toBe('not_found')
      expect((await ok('list_webhook_deliveries', { email_id: emailId })).items).toEqual([])
      await own.close()
    })

    test('functions: route to the fallback, the topology shows it; secrets of a function and of the organization', async () => {
      const owner = await createOrg()
      const own = await mcpClient(t, owner.key, era)
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = (await own.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent: any }
        if (!result.isError) expect(validate(name, result.structuredContent)).toBe(true)
        return result
      }
      const code =
        'export default { async fetch(request) { const event = await request.json(); console.log("ran for", event.email.headers.subject); return new Response("ok") } }'
      const fn = (await call('deploy_function', { name: `routed-${era}`, code })).structuredContent
      expect((await call('get_routing_topology', {})).structuredContent.functions).toEqual([
        expect.objectContaining({ function_id: fn.id, slot: 'none', endpoint_id: null }),
      ])
      const routed = (await call('route_function', { function_id: fn.id, domain_id: null })).structuredContent
      expect(routed.id).toBe(fn.id)
      const [wired] = (await call('get_routing_topology', {})).structuredContent.functions
      expect(wired).toMatchObject({ function_id: fn.id, slot: 'fallback', enabled: true, domain_id: null })
      expect(wired.endpoint_id).toBeString()
      expect(toolErrorOf(await call('route_function', { function_id: crypto.randomUUID(), domain_id: null })).code).toBe('not_found')

      // mail for the organization now goes to the function: replaying its delivery runs it here, with logs and an invocation to read
      const emailId = await inbound(await managedAddress(t.ctx, owner.orgId), `for the function ${era}`, undefined, owner)
      const [delivery] = (await call('list_webhook_deliveries', { email_id: emailId })).structuredContent.items
      expect(delivery.endpoint_url).toBe(`function://${fn.id}`)
      expect((await call('replay_webhook_delivery', { delivery_id: delivery.id })).structuredContent).toEqual({ delivered: 1, failed: 0 })
      const runs = (await call('list_function_invocations', { function_id: fn.id })).structuredContent
      expect(runs).toMatchObject({ total: 1, items: [{ outcome: 'ok', response_status: 200 }] })
      const run = (await call('get_function_invocation', { function_id: fn.id, invocation_id: runs.items[0].id })).structuredContent
      expect(run.logs.map((l: { message: string }) => l.message)).toEqual([`ran for for the function ${era}`])
      expect((await call('list_function_logs', { function_id: fn.id })).structuredContent.items).toEqual([
        expect.objectContaining({ invocation_id: run.id, level: 'log', message: `ran for for the function ${era}` }),
      ])

      const own1 = (await call('set_function_secret', { function_id: fn.id, key: 'API_TOKEN', value: 'function value' })).structuredContent
      expect(own1).toMatchObject({ key: 'API_TOKEN', created: true })
      expect(JSON.stringify(own1)).not.toContain('function value')
      expect((await call('set_function_secret', { function_id: fn.id, key: 'API_TOKEN', value: 'replaced' })).structuredContent.created).toBe(false)
      await call('set_function_secret', { key: 'ORG_WIDE', value: 'org value' })
      expect((await call('list_function_secrets', { function_id: fn.id })).structuredContent.items.map((s: { key: string }) => s.key)).toEqual(['API_TOKEN'])
      expect((await call('list_function_secrets', {})).structuredContent.items.map((s: { key: string }) => s.key)).toEqual(['ORG_WIDE'])
      const reserved = toolErrorOf(await call('set_function_secret', { function_id: fn.id, key: 'SERVICE_API_KEY', value: 'x' }))
      expect(reserved).toMatchObject({ code: 'validation_error' })
      expect(reserved.message).toStartWith('key SERVICE_API_KEY: is reserved')
      expect((await call('delete_function_secret', { function_id: fn.id, key: 'API_TOKEN' })).structuredContent).toEqual({ key: 'API_TOKEN', deleted: true })
      expect(toolErrorOf(await call('delete_function_secret', { function_id: fn.id, key: 'API_TOKEN' })).code).toBe('not_found')
      // another organization's function does not exist for the tests' organization
      expect((await fails('list_function_secrets', { function_id: fn.id })).code).toBe('not_found')
      expect((await fails('route_function', { function_id: fn.id, domain_id: null })).code).toBe('not_found')
      await own.close()
    })

    test('memories: merge patch, and a batch that applies all or nothing', async () => {
      const key = `mcp/patch/${era}/${unique()}`
      await ok('set_memory', { key, value: { a: 1, b: { c: 2 } } })
      const patched = await ok('patch_memory', { key, patch: { a: null, b: { d: 3 } } })
      expect(patched.value).toEqual({ b: { c: 2, d: 3 } })
      expect((await fails('patch_memory', { key: `${key}/missing`, patch: { a: 1 } })).code).toBe('not_found')
      expect((await fails('patch_memory', { key, patch: { a: 2 }, if_version: patched.version - 1 })).code).toBe('precondition_failed')
      const other = `${key}/other`
      const batch = await ok('batch_memories', {
        operations: [
          { op: 'check', key, version: patched.version },
          { op: 'set', key: other, value: 1 },
          { op: 'delete', key },
        ],
      })
      expect(batch.results.map((r: { op: string; key: string }) => [r.op, r.key])).toEqual([
        ['check', key],
        ['set', other],
        ['delete', key],
      ])
      expect((await fails('get_memory', { key })).code).toBe('not_found')
      // a failing check: the set before it does not happen either
      const failed = await fails('batch_memories', {
        operations: [
          { op: 'set', key: `${key}/never`, value: 1 },
          { op: 'check', key: other, exists: false },
        ],
      })
      expect(failed.code).toBe('precondition_failed')
      expect(failed.message).toContain('operations[1]')
      expect((await fails('get_memory', { key: `${key}/never` })).code).toBe('not_found')
      expect((await fails('batch_memories', { operations: [] })).code).toBe('validation_error')
    })

    test("networks: discover a member's published agent and admit it as a contact; contacts; address notes with versions", async () => {
      // another organization publishes an agent and joins a network of the tests' organization (REST: management stays there)
      const partner = await createOrg()
      const agent = await managedAddress(t.ctx, partner.orgId)
      expect(
        (await t.request('PUT', `/v1/published-agents/${agent}`, { key: partner.key, body: { display_name: `Helper ${era}`, skills: ['triage'] } })).status,
      ).toBe(201)
      const network = (await t.request('POST', '/v1/networks', { key: org.key, body: { name: `Partners ${era}` } })).body.data
      expect((await t.request('POST', `/v1/networks/${network.id}/members`, { key: org.key, body: { org_id: partner.orgId } })).status).toBe(201)
      expect((await t.request('POST', `/v1/networks/${network.id}/accept`, { key: partner.key })).status).toBe(200)

      expect((await ok('list_networks', { limit: 100 })).items.map((n: { id: string }) => n.id)).toContain(network.id)
      const found = await ok('discover_network_agents', { network_id: network.id, skill: 'triage' })
      expect(found.items).toEqual([
        expect.objectContaining({
          address: agent,
          display_name: `Helper ${era}`,
          accepts_contacts: true,
          org: { id: partner.orgId, name: expect.any(String) },
        }),
      ])
      expect((await ok('discover_network_agents', { network_id: network.id, q: 'nobody-matches-this' })).items).toEqual([])
      const admitted = await ok('admit_network_agent', { network_id: network.id, agent_id: found.items[0].id, owner_address: inbox, tags: ['partner'] })
      expect(admitted).toMatchObject({ owner_address: inbox, address: agent, tags: ['partner'], created: true })
      expect((await ok('admit_network_agent', { network_id: network.id, agent_id: found.items[0].id, owner_address: inbox, name: 'Helper' })).created).toBe(
        false,
      )
      // a network the organization is not in does not exist for it
      expect((await fails('discover_network_agents', { network_id: crypto.randomUUID() })).code).toBe('not_found')

      expect((await ok('list_contacts', { owner_address: inbox, tag: 'partner' })).items.map((c: { id: string }) => c.id)).toContain(admitted.id)
      expect(await ok('get_contact', { contact_id: admitted.id })).toMatchObject({ id: admitted.id, name: 'Helper', address: agent })
      const saved = await ok('save_contact', { owner_address: inbox, address: `someone-${era}@example.com`, name: 'Someone' })
      expect(saved.created).toBe(true)
      expect((await ok('save_contact', { owner_address: inbox, address: `someone-${era}@example.com`, tags: ['x'] })).name).toBe('Someone')
      expect(await ok('delete_contact', { contact_id: saved.id })).toEqual({ id: saved.id, deleted: true })
      expect((await fails('get_contact', { contact_id: saved.id })).code).toBe('not_found')

      expect((await fails('create_address_note', { address: 'not an address', body: 'x' })).message).toStartWith('address: ')
      expect((await fails('save_contact', { owner_address: inbox, address: 'not an address' })).message).toStartWith('address: ')
      const note = await ok('create_address_note', { address: agent, body: 'answers within a day' })
      expect(note).toMatchObject({ address: agent, body: 'answers within a day' })
      expect((await ok('list_address_notes', { address: agent })).items.map((n: { id: string }) => n.id)).toContain(note.id)
      const edited = await ok('update_address_note', { note_id: note.id, body: 'answers within an hour', if_version: note.version })
      expect(edited.version).toBeGreaterThan(note.version)
      expect((await fails('update_address_note', { note_id: note.id, body: 'stale', if_version: note.version })).code).toBe('precondition_failed')
      expect((await ok('get_address_note', { note_id: note.id })).body).toBe('answers within an hour')
      expect(await ok('delete_address_note', { note_id: note.id, if_version: edited.version })).toEqual({ id: note.id, deleted: true })
      expect((await fails('get_address_note', { note_id: note.id })).code).toBe('not_found')
    })

    test('suppressions: added (created, then found), listed, deleted by address; a bad address names the field', async () => {
      const address = `suppressed-${era}@example.com`
      const added = await ok('create_suppression', { address, detail: 'asked to stop' })
      expect(added).toMatchObject({ address, reason: 'manual', detail: 'asked to stop', send_id: null, created: true })
      expect((await ok('create_suppression', { address })).created).toBe(false)
      expect((await ok('list_suppressions', {})).items.map((r: { address: string }) => r.address)).toContain(address)
      expect(await ok('delete_suppression', { address })).toEqual({ address, deleted: true })
      expect((await fails('delete_suppression', { address })).code).toBe('not_found')
      expect((await fails('create_suppression', { address: 'not an address' })).message).toStartWith('address: ')
    })

    test('payment challenges: the x402_payments entitlement gates them like the REST routes', async () => {
      const error = await fails('create_payment_challenge', { amount: '10000', network: 'base-sepolia', idempotency_key: `p-${unique()}` })
      expect(error.code).toBe('feature_disabled')
      expect((await fails('get_payment_challenge', { challenge_id: crypto.randomUUID() })).code).toBe('feature_disabled')
      for (const [name, args] of [
        ['pay_payment_challenge', { challenge_id: crypto.randomUUID(), payment: {} }],
        ['get_spend_policy', {}],
        ['update_spend_policy', { paused: true }],
        ['list_payments', {}],
        ['list_declined_payments', {}],
      ] as const) {
        expect({ name, code: (await fails(name, args)).code }).toEqual({ name, code: 'feature_disabled' })
      }
    })

    test('every tool has answered at least once with structuredContent valid against its output schema', () => {
      // the x402 tools answer feature_disabled here; test/mcp/payments.test.ts validates their results on anvil
      const elsewhere = [
        'create_payment_challenge',
        'get_payment_challenge',
        'pay_payment_challenge',
        'get_spend_policy',
        'update_spend_policy',
        'list_payments',
        'list_declined_payments',
      ]
      expect([...schemas.keys()].filter(name => !validated.has(name) && !elsewhere.includes(name))).toEqual([])
    })
  })
}

describe('a stock client of the v1 SDK (1.32)', () => {
  test('a failing tool reaches callTool as isError with the error code readable, not as a client-side -32602', async () => {
    const transport = new V1Transport(new URL('http://api.test.local/mcp'), {
      fetch: appFetch(t),
      requestInit: { headers: { authorization: `Bearer ${org.key}` } },
    })
    const client = new V1Client({ name: 'stock-v1-client', version: '1.0.0' })
    await client.connect(transport)
    // the v1 client validates structuredContent against the output schema only after listing the tools
    await client.listTools()
    const missing = await client.callTool({ name: 'get_inbox', arguments: { inbox_id: crypto.randomUUID() } })
    expect(missing.isError).toBe(true)
    expect(toolErrorOf(missing).code).toBe('not_found')
    const invalid = await client.callTool({ name: 'get_inbox', arguments: { inbox_id: 'not-a-uuid' } })
    expect(toolErrorOf(invalid)).toMatchObject({ code: 'validation_error', message: expect.stringMatching(/^inbox_id: /) })
    expect((await client.callTool({ name: 'list_inboxes', arguments: {} })).isError).toBeFalsy()
    await client.close()
  })
})
