/**
 * A query per type, on data made the real way: mail through the SMTP listener, a function
 * invoked by its delivery through a running worker and QuickJS, a domain claimed, a send
 * scheduled, a memory written, an x402 challenge issued. Each answer is compared with what the
 * REST API says about the same object, field names aside.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createOrg, testSql, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { unique } from '../helpers/identity'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { until } from '../helpers/until'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { newChallenge, registerPayout, wallet } from '../x402/helpers'
import { gqlData } from './helpers'

let h: InboundHarness
let worker: Worker
let org: TestOrg
let address: string
const rest: Record<string, any> = {}

const get = (path: string) => h.request('GET', path, { key: org.key }).then(r => expectOk(r))
const q = (query: string, variables?: Record<string, unknown>) => gqlData(h, query, { key: org.key, variables })

beforeAll(async () => {
  h = await inboundHarness({ WEBHOOK_ALLOW_LOOPBACK: 'true', FUNCTION_WALL_CLOCK_MS: '10000' })
  worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  org = await createOrg({ plan: 'power' })
  address = await managedAddress(h.ctx, org.orgId)
  const other = await createOrg()
  const otherAddress = await managedAddress(h.ctx, other.orgId)

  rest.domain = expectOk(await h.request('POST', '/v1/domains', { key: org.key, body: { domain: `gql-${unique()}.example` } }), 201)
  rest.function = expectOk(
    await h.request('POST', '/v1/functions', {
      key: org.key,
      body: { name: `gql-${unique()}`, code: 'export default { async fetch(request) { console.log("seen"); return new Response("ok") } }' },
    }),
    201,
  )
  rest.function = expectOk(await h.request('PUT', `/v1/functions/${rest.function.id}/route`, { key: org.key, body: { domain_id: null } }))
  await h.transport.sendMail({
    from: 'Sam <sam@sender.example>',
    to: address,
    subject: 'Quarterly numbers',
    text: 'See attached.',
    attachments: [{ filename: 'n.csv', content: 'a,b\n1,2\n' }],
  })
  rest.invocations = await until(
    () => get(`/v1/functions/${rest.function.id}/invocations`),
    list => list.length > 0 && list[0].outcome !== undefined,
  )
  rest.invocation = await get(`/v1/functions/${rest.function.id}/invocations/${rest.invocations[0].id}`)
  rest.delivery = await get(`/v1/webhooks/deliveries/${rest.invocation.delivery_id}`)
  rest.email = await get(`/v1/emails/${rest.invocation.email_id}`)
  rest.send = expectOk(
    await h.request('POST', '/v1/send-mail', {
      key: org.key,
      body: { from: address, to: otherAddress, subject: 'later', body_text: 'x', scheduled_at: new Date(Date.now() + 3600_000).toISOString() },
    }),
  )
  expectOk(await h.request('PUT', '/v1/memories/profile%2Fsam', { key: org.key, body: { value: { likes: ['csv'] }, metadata: { source: 'test' } } }))

  const payee = wallet()
  await registerPayout(h, org, payee)
  rest.challenge = await newChallenge(h, org, { description: 'a report' })
  // the ledger row a verified payment leaves (a payment needs a chain; test/x402 makes real ones)
  const sql = await testSql()
  const settlement = randomUUIDv7()
  await sql`insert into x402_settlements (id, challenge_id, payee_org, network, chain_id, asset, payer, nonce, amount, payment)
            values (${settlement}, ${rest.challenge.id}, ${org.orgId}, 'base-sepolia', 84532, ${rest.challenge.asset.toLowerCase()}, ${wallet().address.toLowerCase()}, ${`0x${unique()}`}, 10000, '{}')`
  await sql`insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
            values (${randomUUIDv7()}, ${org.orgId}, ${settlement}, ${rest.challenge.id}, 'received', 'pending', 10000, ${rest.challenge.asset}, 'base-sepolia', '0xpayer')`
}, 90_000)
afterAll(async () => {
  await worker.stop(1000)
  await h.stop()
})

describe('a query per type', () => {
  test('Viewer, Account, AccountLimits, Storage', async () => {
    const data = await q(
      '{ viewer { orgId role authMethod keyId requestId } account { plan entitlements limits { apiPerMinute memoryKeysMax webhooksMaxGlobal } storage { usedBytes includedMb emailsCount } } }',
    )
    expect(data.viewer).toMatchObject({ orgId: org.orgId, role: 'owner', authMethod: 'api_key', keyId: org.keyId })
    expect(data.viewer.requestId).toStartWith('req_')
    const account = await get('/v1/account')
    expect(data.account).toMatchObject({
      plan: 'power',
      entitlements: account.entitlements,
      limits: { apiPerMinute: account.limits.api_per_minute, memoryKeysMax: account.limits.memory_keys_max },
    })
    const storage = await get('/v1/account/storage')
    expect(data.account.storage).toEqual({ usedBytes: storage.used_bytes, includedMb: storage.included_mb, emailsCount: storage.emails_count })
  })

  test('Domain, DnsRecord', async () => {
    const data = await q(
      `{ domains { totalCount nodes { id domain } } domain(id: "${rest.domain.id}") { domain status createdAt dnsRecords { type name value priority purpose status } checks } }`,
    )
    expect(data.domains).toEqual({ totalCount: 1, nodes: [{ id: rest.domain.id, domain: rest.domain.domain }] })
    expect(data.domain).toEqual({
      domain: rest.domain.domain,
      status: 'pending',
      createdAt: rest.domain.created_at,
      dnsRecords: rest.domain.dns_records,
      checks: null,
    })
  })

  test('Inbox', async () => {
    const [inbox] = await get('/v1/inboxes')
    const data = await q(`{ inboxes { totalCount edges { cursor node { id address } } } inbox(id: "${inbox.id}") { address displayName createdAt } }`)
    expect(data.inboxes.totalCount).toBe(1)
    expect(data.inboxes.edges[0].node).toEqual({ id: inbox.id, address })
    expect(data.inbox).toEqual({ address, displayName: null, createdAt: inbox.created_at })
  })

  test('Email (summary and full), MailAddress, Attachment, Envelope, Header', async () => {
    const e = rest.email
    const data = await q(`{
      emails(direction: inbound) { totalCount nodes { id subject from { address name } attachmentCount text } }
      email(id: "${e.id}") { id threadId direction eventType subject receivedAt sizeBytes contentDiscarded messageId references sentAt text html
        headers { name value } attachments { index filename contentType sizeBytes } authentication envelope { mailFrom rcptTo helo tls } contentDiscardedAt }
    }`)
    expect(data.emails.totalCount).toBe(1)
    expect(data.emails.nodes[0]).toEqual({
      id: e.id,
      subject: 'Quarterly numbers',
      from: { address: 'sam@sender.example', name: 'Sam' },
      attachmentCount: 1,
      text: e.text,
    })
    expect(data.email).toEqual({
      id: e.id,
      threadId: e.thread_id,
      direction: 'inbound',
      eventType: 'email.received',
      subject: e.subject,
      receivedAt: e.received_at,
      sizeBytes: e.size_bytes,
      contentDiscarded: false,
      messageId: e.message_id,
      references: e.references,
      sentAt: e.sent_at,
      text: e.text,
      html: e.html,
      headers: e.headers,
      attachments: [{ index: 0, filename: 'n.csv', contentType: 'text/csv', sizeBytes: e.attachments[0].size_bytes }],
      authentication: e.authentication,
      envelope: { mailFrom: 'sam@sender.example', rcptTo: [address], helo: e.envelope.helo, tls: false },
      contentDiscardedAt: null,
    })
  })

  test('Thread with its emails', async () => {
    const thread = await get(`/v1/threads/${rest.email.thread_id}`)
    const data = await q(
      `{ threads { totalCount nodes { id } } thread(id: "${thread.id}") { subject participants messageCount lastMessageAt createdAt emails { totalCount nodes { id thread { id } } } } }`,
    )
    expect(data.threads.nodes.map((t: { id: string }) => t.id)).toContain(thread.id)
    expect(data.thread).toEqual({
      subject: thread.subject,
      participants: thread.participants,
      messageCount: 1,
      lastMessageAt: thread.last_message_at,
      createdAt: thread.created_at,
      emails: { totalCount: 1, nodes: [{ id: rest.email.id, thread: { id: thread.id } }] },
    })
  })

  test('SentEmail', async () => {
    const send = await get(`/v1/sent-emails/${rest.send.id}`)
    const data = await q(
      `{ sentEmails { totalCount nodes { id status } } sentEmail(id: "${rest.send.id}") { id status from to subject scheduledAt emailId error { code } repeat { everyMinutes } createdAt email { id } } }`,
    )
    expect(data.sentEmails).toEqual({ totalCount: 1, nodes: [{ id: rest.send.id, status: 'scheduled' }] })
    expect(data.sentEmail).toEqual({
      id: rest.send.id,
      status: 'scheduled',
      from: address,
      to: send.to,
      subject: 'later',
      scheduledAt: send.scheduled_at,
      emailId: null,
      error: null,
      repeat: null,
      createdAt: send.created_at,
      email: null,
    })
  })

  test('Endpoint with its function and deliveries', async () => {
    const endpoint = await get(`/v1/endpoints/${rest.delivery.endpoint_id}`)
    const data = await q(
      `{ endpoints { totalCount nodes { id } } endpoint(id: "${endpoint.id}") { kind url functionId enabled isRouteTarget rules createdAt function { id name } deliveries { totalCount nodes { id status } } } }`,
    )
    expect(data.endpoints).toEqual({ totalCount: 1, nodes: [{ id: endpoint.id }] })
    expect(data.endpoint).toEqual({
      kind: 'function',
      url: endpoint.url,
      functionId: rest.function.id,
      enabled: true,
      isRouteTarget: endpoint.is_route_target,
      rules: endpoint.rules,
      createdAt: endpoint.created_at,
      function: { id: rest.function.id, name: rest.function.name },
      deliveries: { totalCount: 1, nodes: [{ id: rest.delivery.id, status: rest.delivery.status }] },
    })
  })

  test('Delivery with its endpoint and email', async () => {
    const d = rest.delivery
    const data = await q(
      `{ deliveries(emailId: "${rest.email.id}") { totalCount } delivery(id: "${d.id}") { eventId eventType status attemptCount responseStatus endpointUrl emailSummary { sender subject } endpoint { id } email { subject } } }`,
    )
    expect(data.deliveries.totalCount).toBe(1)
    expect(data.delivery).toEqual({
      eventId: d.event_id,
      eventType: 'email.received',
      status: d.status,
      attemptCount: d.attempt_count,
      responseStatus: d.response_status,
      endpointUrl: d.endpoint_url,
      emailSummary: { sender: 'sam@sender.example', subject: 'Quarterly numbers' },
      endpoint: { id: d.endpoint_id },
      email: { subject: 'Quarterly numbers' },
    })
  })

  test('Function, FunctionRoute, Invocation, InvocationLog', async () => {
    const f = rest.function
    const i = rest.invocation
    const data = await q(`{
      functions { totalCount nodes { id } }
      function(id: "${f.id}") { name deployStatus currentDeploymentId tags route { domainId enabled } endpoint { id } invocations { totalCount nodes { id outcome email { id } delivery { id } function { id } } } }
      invocation(functionId: "${f.id}", id: "${i.id}") { outcome cpuMs requestMethod responseStatus exceptionStack logs { level message } }
    }`)
    expect(data.functions).toEqual({ totalCount: 1, nodes: [{ id: f.id }] })
    expect(data.function).toEqual({
      name: f.name,
      deployStatus: 'deployed',
      currentDeploymentId: f.current_deployment_id,
      tags: [],
      route: { domainId: null, enabled: true },
      endpoint: { id: rest.delivery.endpoint_id },
      invocations: {
        totalCount: rest.invocations.length,
        nodes: rest.invocations.map((r: any) => ({
          id: r.id,
          outcome: r.outcome,
          email: { id: rest.email.id },
          delivery: { id: r.delivery_id },
          function: { id: f.id },
        })),
      },
    })
    expect(data.invocation).toEqual({
      outcome: i.outcome,
      cpuMs: i.cpu_ms,
      requestMethod: i.request_method,
      responseStatus: i.response_status,
      exceptionStack: i.exception_stack,
      logs: i.logs.map((l: any) => ({ level: l.level, message: l.message })),
    })
    expect(data.invocation.logs.map((l: any) => l.message)).toContain('seen')
  })

  test('Memory', async () => {
    const data = await q(
      '{ memories(prefix: "profile/") { totalCount nodes { key value version metadata } } memory(key: "profile/sam") { key value version expiresAt } }',
    )
    expect(data.memories).toEqual({
      totalCount: 1,
      nodes: [{ key: 'profile/sam', value: { likes: ['csv'] }, version: expect.any(Number), metadata: { source: 'test' } }],
    })
    expect(data.memory).toEqual({ key: 'profile/sam', value: { likes: ['csv'] }, version: data.memories.nodes[0].version, expiresAt: null })
  })

  test('Payment, PaymentChallenge', async () => {
    const c = rest.challenge
    const data = await q(
      `{ payments(direction: received) { totalCount nodes { direction status amount network counterparty challenge { id amount } } } paymentChallenge(id: "${c.id}") { id status network amount asset payTo description paymentRequirements nonceBinding { interactionId } expiresAt createdAt } }`,
    )
    expect(data.payments).toEqual({
      totalCount: 1,
      nodes: [
        {
          direction: 'received',
          status: 'pending',
          amount: '10000',
          network: 'base-sepolia',
          counterparty: '0xpayer',
          challenge: { id: c.id, amount: c.amount },
        },
      ],
    })
    expect(data.paymentChallenge).toEqual({
      id: c.id,
      status: c.status,
      network: c.network,
      amount: c.amount,
      asset: c.asset,
      payTo: c.pay_to,
      description: 'a report',
      paymentRequirements: c.payment_requirements,
      nonceBinding: { interactionId: c.nonce_binding.interaction_id },
      expiresAt: c.expires_at,
      createdAt: c.created_at,
    })
  })

  test('pagination: first, after and pageInfo walk a list to its end', async () => {
    const other = await createOrg()
    for (let i = 0; i < 5; i++) expectOk(await h.request('POST', '/v1/inboxes', { key: other.key }), 201)
    const seen: string[] = []
    let after: string | null = null
    for (let page = 0; page < 3; page++) {
      const data: any = await gqlData(
        h,
        'query($after: String) { inboxes(first: 2, after: $after) { totalCount nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }',
        { key: other.key, variables: { after } },
      )
      expect(data.inboxes.totalCount).toBe(5)
      expect(data.inboxes.pageInfo.hasNextPage).toBe(page < 2)
      expect(data.inboxes.pageInfo.hasPreviousPage).toBe(false)
      seen.push(...data.inboxes.nodes.map((n: { id: string }) => n.id))
      after = data.inboxes.pageInfo.endCursor
    }
    expect(seen).toEqual(expectOk(await h.request('GET', '/v1/inboxes', { key: other.key })).map((i: { id: string }) => i.id))
  })
  test('Label, and the labels of Email and Thread; emails and threads filtered by label', async () => {
    const e = rest.email
    expectOk(await h.request('POST', '/v1/labels', { key: org.key, body: { name: 'gql' } }), 201)
    expectOk(await h.request('POST', `/v1/emails/${e.id}/labels`, { key: org.key, body: { add: ['gql'] } }))
    const data = await q(`{
      labels { name system createdAt }
      email(id: "${e.id}") { labels thread { labels } }
      tagged: emails(label: ["gql", "unread"]) { nodes { id labels } }
      none: emails(label: ["gql", "read"]) { totalCount }
      threads(label: ["gql"]) { nodes { id labels } }
    }`)
    const labels = await get('/v1/labels')
    expect(data.labels).toEqual(labels.map((l: any) => ({ name: l.name, system: l.system, createdAt: l.created_at })))
    expect(data.labels.map((l: { name: string }) => l.name)).toContain('gql')
    expect(data.email).toEqual({ labels: ['gql', 'inbound', 'unread'], thread: { labels: ['gql', 'inbound', 'unread'] } })
    expect(data.tagged.nodes).toEqual([{ id: e.id, labels: ['gql', 'inbound', 'unread'] }])
    expect(data.none.totalCount).toBe(0)
    expect(data.threads.nodes).toEqual([{ id: e.thread_id, labels: (await get(`/v1/threads/${e.thread_id}`)).labels }])
  })
})
