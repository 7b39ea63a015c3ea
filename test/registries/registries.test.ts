/**
 * Registries: the built-in one (agents published publicly here) and the served A2A agent cards;
 * registries added by URL, fetched by the registries.fetch job from a real HTTP server on
 * loopback (in the loopback test mode) and cached with their fetch time, size-capped, their text
 * cleaned; private addresses refused otherwise, when added and again when fetched.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { until } from '../helpers/until'
import { memoryResolver } from '../../src/dns/resolver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { registryFetchJob } from '../../src/registries/fetch.job'
import { registryRefreshJob } from '../../src/registries/refresh.job'
import { testSql } from '../helpers/app'
import { unique } from '../helpers/identity'

/** What the loopback registry host serves, by path. */
const documents = new Map<string, string>()
const hits: string[] = []
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(req) {
    const path = new URL(req.url).pathname
    hits.push(path)
    const body = documents.get(path)
    return body === undefined ? new Response('no', { status: 404 }) : new Response(body, { headers: { 'content-type': 'application/json' } })
  },
})
const base = `http://127.0.0.1:${server.port}`

let loop: TestApp
let worker: Worker
let org: TestOrg

const card = (name: string, skills: string[], extra: Record<string, unknown> = {}) => ({
  protocolVersion: '0.3.0',
  name,
  description: `${name} does things`,
  url: `https://agents.example/${name}`,
  skills: skills.map(id => ({ id, name: id, tags: [] })),
  ...extra,
})

const registry = (app: TestApp, o: TestOrg, id: string) => app.request('GET', `/v1/registries/${id}`, { key: o.key })
const settled = (app: TestApp, o: TestOrg, id: string) =>
  until(
    async () => expectOk(await registry(app, o, id)),
    r => r.status !== 'pending',
  )

beforeAll(async () => {
  loop = await testApp({ WEBHOOK_ALLOW_LOOPBACK: 'true' })
  org = await createOrg()
})
afterAll(() => server.stop(true))

describe('the built-in registry', () => {
  let publicAgent: string
  let networksOnly: string
  beforeAll(async () => {
    publicAgent = await managedAddress(loop.ctx, org.orgId)
    networksOnly = await managedAddress(loop.ctx, org.orgId)
    expectOk(
      await loop.request('PUT', `/v1/published-agents/${publicAgent}`, {
        key: org.key,
        body: { display_name: `Public ${unique()}`, description: 'Answers questions', skills: ['faq'], visibility: 'public' },
      }),
      201,
    )
    expectOk(await loop.request('PUT', `/v1/published-agents/${networksOnly}`, { key: org.key, body: { display_name: 'Private', skills: ['faq'] } }), 201)
  })

  test('lists the agents published publicly on this service, to any organization; searchable by skill', async () => {
    const other = await createOrg()
    const registries = await loop.request('GET', '/v1/registries', { key: other.key })
    expect(expectOk(registries)[0]).toMatchObject({ id: 'builtin', kind: 'builtin', url: null, status: 'ok' })
    const agents = expectOk(await loop.request('GET', `/v1/registries/builtin/agents?skill=faq&limit=100`, { key: other.key }))
    const addresses = agents.map((a: { address: string }) => a.address)
    expect(addresses).toContain(publicAgent)
    expect(addresses).not.toContain(networksOnly)
    const entry = agents.find((a: { address: string }) => a.address === publicAgent)
    const detail = expectOk(await loop.request('GET', `/v1/registries/builtin/agents/${entry.id}`, { key: other.key }))
    expect(detail.card).toMatchObject({ protocolVersion: '0.3.0', name: entry.name, url: `mailto:${publicAgent}`, skills: [{ id: 'faq' }] })
  })

  test('the service serves the A2A agent card of a public address without a credential, and nothing for the others', async () => {
    const res = await loop.request('GET', `/agents/${encodeURIComponent(publicAgent)}/.well-known/agent-card.json`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      name: expect.stringMatching(/^Public /),
      description: 'Answers questions',
      url: `mailto:${publicAgent}`,
      defaultInputModes: expect.any(Array),
      skills: [{ id: 'faq', name: 'faq' }],
    })
    expectError(await loop.request('GET', `/agents/${encodeURIComponent(networksOnly)}/.well-known/agent-card.json`), 404, 'not_found')
    const published = expectOk(await loop.request('GET', '/v1/published-agents', { key: org.key }))
    expect(published.find((a: { address: string }) => a.address === publicAgent).agent_card_url).toBe(
      `http://api.test.local/agents/${encodeURIComponent(publicAgent)}/.well-known/agent-card.json`,
    )
  })
})

describe('a registry added by URL (loopback test mode)', () => {
  // one worker at a time runs registries.fetch: a job is fetched under the rules of the app that claims it
  beforeAll(async () => {
    worker = await startWorker(loop.ctx, { kinds: [registryFetchJob], pollMs: 50 })
  })
  afterAll(() => worker.stop(1000))

  test('a bare origin is its agent card: fetched by the job from the loopback server, cached with its fetch time', async () => {
    documents.set('/.well-known/agent-card.json', JSON.stringify(card('solo', ['Search'])))
    const added = expectOk(await loop.request('POST', '/v1/registries', { key: org.key, body: { name: 'Solo', url: base } }), 201)
    expect(added).toMatchObject({ kind: 'a2a', status: 'pending', url: base, agent_count: 0, fetched_at: null })
    const done = await settled(loop, org, added.id)
    expect(done).toMatchObject({ status: 'ok', agent_count: 1, last_error: null })
    expect(hits).toContain('/.well-known/agent-card.json')
    const [agent] = expectOk(await loop.request('GET', `/v1/registries/${added.id}/agents?skill=search`, { key: org.key }))
    expect(agent).toMatchObject({
      registry_id: added.id,
      name: 'solo',
      url: 'https://agents.example/solo',
      address: null,
      skills: ['search'],
      fetched_at: done.fetched_at,
    })
    const detail = expectOk(await loop.request('GET', `/v1/registries/${added.id}/agents/${agent.id}`, { key: org.key }))
    expect(detail.card).toEqual(card('solo', ['Search']))
  })

  test('a catalog of cards; text is cleaned of control and bidi characters; q and skill filter; a refresh replaces the cache', async () => {
    documents.set(
      '/catalog.json',
      JSON.stringify({ agents: [card('alpha\u202e\u0007x', ['ocr']), card('beta', ['ocr', 'translate']), { no: 'name' }, 'junk'] }),
    )
    const added = expectOk(await loop.request('POST', '/v1/registries', { key: org.key, body: { name: 'Catalog', url: `${base}/catalog.json` } }), 201)
    expect(await settled(loop, org, added.id)).toMatchObject({ status: 'ok', agent_count: 2 })
    const names = expectOk(await loop.request('GET', `/v1/registries/${added.id}/agents`, { key: org.key }))
      .map((a: { name: string }) => a.name)
      .sort()
    expect(names).toEqual(['alphax', 'beta'])
    expect(
      expectOk(await loop.request('GET', `/v1/registries/${added.id}/agents?skill=translate`, { key: org.key })).map((a: { name: string }) => a.name),
    ).toEqual(['beta'])
    expect(expectOk(await loop.request('GET', `/v1/registries/${added.id}/agents?q=ALPHA`, { key: org.key })).map((a: { name: string }) => a.name)).toEqual([
      'alphax',
    ])
    documents.set('/catalog.json', JSON.stringify([card('gamma', [])]))
    const before = expectOk(await registry(loop, org, added.id)).fetched_at
    expectOk(await loop.request('POST', `/v1/registries/${added.id}/refresh`, { key: org.key }), 202)
    const after = await until(
      async () => expectOk(await registry(loop, org, added.id)),
      r => r.fetched_at !== before,
    )
    expect(after.agent_count).toBe(1)
  })

  test('the periodic refresh fetches again the registries last fetched more than six hours ago, and only those', async () => {
    documents.set('/stale.json', JSON.stringify([card('old', [])]))
    documents.set('/fresh.json', JSON.stringify([card('new', [])]))
    const stale = expectOk(await loop.request('POST', '/v1/registries', { key: org.key, body: { name: 'Stale', url: `${base}/stale.json` } }), 201)
    const fresh = expectOk(await loop.request('POST', '/v1/registries', { key: org.key, body: { name: 'Fresh', url: `${base}/fresh.json` } }), 201)
    await settled(loop, org, stale.id)
    const freshBefore = (await settled(loop, org, fresh.id)).fetched_at
    await (await testSql())`update registries set attempted_at = now() - interval '7 hours' where id = ${stale.id}`
    documents.set('/stale.json', JSON.stringify([card('renewed', []), card('more', [])]))
    documents.set('/fresh.json', JSON.stringify([]))
    await registryRefreshJob.handle(loop.ctx, {}, undefined as never)
    expect(
      await until(
        async () => expectOk(await registry(loop, org, stale.id)),
        r => r.agent_count === 2,
      ),
    ).toMatchObject({ status: 'ok', agent_count: 2 })
    expect(expectOk(await registry(loop, org, fresh.id))).toMatchObject({ status: 'ok', agent_count: 1, fetched_at: freshBefore })
  })

  test('a document over the size cap, not JSON, or an error status fails the fetch and keeps the cached cards', async () => {
    documents.set('/big.json', JSON.stringify([card('ok', [])]))
    const added = expectOk(await loop.request('POST', '/v1/registries', { key: org.key, body: { name: 'Big', url: `${base}/big.json` } }), 201)
    expect(await settled(loop, org, added.id)).toMatchObject({ status: 'ok', agent_count: 1 })
    documents.set('/big.json', JSON.stringify([card('huge', [], { description: 'x'.repeat(600 * 1024) })]))
    expectOk(await loop.request('POST', `/v1/registries/${added.id}/refresh`, { key: org.key }), 202)
    const failed = await until(
      async () => expectOk(await registry(loop, org, added.id)),
      r => r.status === 'failed',
    )
    expect(failed).toMatchObject({ status: 'failed', agent_count: 1, last_error: expect.stringContaining('larger than') })
    documents.delete('/big.json')
    expectOk(await loop.request('POST', `/v1/registries/${added.id}/refresh`, { key: org.key }), 202)
    expect(
      await until(
        async () => expectOk(await registry(loop, org, added.id)),
        r => r.last_error?.includes('HTTP 404') ?? false,
      ),
    ).toMatchObject({ agent_count: 1 })
  })

  test('only an owner or admin adds, refreshes or removes; duplicates are 409; another organization gets 404', async () => {
    const member = await createOrg({ role: 'member' })
    expectError(await loop.request('POST', '/v1/registries', { key: member.key, body: { name: 'x', url: base } }), 403, 'forbidden')
    expectError(await loop.request('POST', '/v1/registries', { key: org.key, body: { name: 'again', url: base } }), 409, 'conflict')
    const [, mine] = expectOk(await loop.request('GET', '/v1/registries', { key: org.key }))
    expectError(await registry(loop, member, mine.id), 404, 'not_found')
    expectError(await loop.request('GET', `/v1/registries/${mine.id}/agents`, { key: member.key }), 404, 'not_found')
    expectError(await loop.request('DELETE', `/v1/registries/${mine.id}`, { key: member.key }), 403, 'forbidden')
    expectError(await loop.request('GET', '/v1/registries/not-a-registry/agents', { key: org.key }), 404, 'not_found')
    expectError(await loop.request('DELETE', '/v1/registries/builtin', { key: org.key }), 409, 'conflict')
    expectOk(await loop.request('DELETE', `/v1/registries/${mine.id}`, { key: org.key }))
    expectError(await registry(loop, org, mine.id), 404, 'not_found')
  })
})

describe('outside the loopback test mode', () => {
  let strict: TestApp
  let strictOrg: TestOrg
  const dns = memoryResolver({ 'cards.example': { A: ['93.184.216.34'] }, 'inside.example': { A: ['10.0.0.7'] } })
  beforeAll(async () => {
    strict = await testApp({}, { resolver: dns })
    strictOrg = await createOrg()
  })

  test('loopback, private and metadata addresses, and names resolving to them, are refused when added', async () => {
    for (const url of [
      base,
      'http://localhost/',
      'https://10.1.2.3/',
      'https://169.254.169.254/latest',
      'https://[::1]/',
      'https://inside.example/',
      'http://cards.example/',
    ]) {
      expectError(await strict.request('POST', '/v1/registries', { key: strictOrg.key, body: { name: 'x', url } }), 400, 'validation_error', /^url: /)
    }
    expect(expectOk(await strict.request('GET', '/v1/registries', { key: strictOrg.key }))).toHaveLength(1)
  })

  test('the job checks again when it fetches: a name that now resolves to a private address is not fetched', async () => {
    const added = expectOk(await strict.request('POST', '/v1/registries', { key: strictOrg.key, body: { name: 'Moved', url: 'https://cards.example/' } }), 201)
    dns.records['cards.example'] = { A: ['127.0.0.1'] }
    const before = hits.length
    const w = await startWorker(strict.ctx, { kinds: [registryFetchJob], pollMs: 50 })
    try {
      const failed = await settled(strict, strictOrg, added.id)
      expect(failed).toMatchObject({ status: 'failed', agent_count: 0, last_error: expect.stringContaining('publicly reachable') })
    } finally {
      await w.stop(1000)
    }
    expect(hits.length).toBe(before)
  })
})
