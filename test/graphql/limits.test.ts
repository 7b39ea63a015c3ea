/**
 * What a query may cost: the depth and cost limits (refused before anything runs, with the v1
 * code and the figures in extensions), and batch loading: a nested query runs the same number
 * of SQL statements for 3 threads as for 12, counted on a database client of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createApp } from '../../src/app'
import { createContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { memoryResolver } from '../../src/dns/resolver'
import { ingest } from '../../src/mail/inbound/ingest'
import { MAX_COST, MAX_DEPTH } from '../../src/graphql/limits'
import { createOrg, TEST_SECRET, testApp, testConfig, type TestApp, type TestOrg } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { unique } from '../helpers/identity'
import { managedAddress, rfc822 } from '../helpers/mail'
import { gql, gqlData } from './helpers'
import { PLUGINS } from '../../src/plugins'

let t: TestApp
let org: TestOrg
beforeAll(async () => {
  t = await testApp({}, { resolver: memoryResolver({}) })
  org = await createOrg()
})

describe('depth', () => {
  test(`${MAX_DEPTH} levels pass, one more is refused before running`, async () => {
    // threads > nodes > emails > nodes > thread > emails > nodes > thread > emails > totalCount: 10
    const ten = '{ threads { nodes { emails { nodes { thread { emails(first: 2) { nodes { thread { emails(first: 1) { totalCount } } } } } } } } } }'
    expect((await gqlData(t, ten, { key: org.key })).threads.nodes).toEqual([])
    const eleven = ten.replace('emails(first: 1) { totalCount }', 'emails(first: 1) { pageInfo { hasNextPage } }')
    const res = await gql(t, eleven, { key: org.key })
    expect(res.status).toBe(400)
    expect(res.body.data).toBeUndefined()
    expect(res.body.errors[0]).toMatchObject({
      message: `query: nests fields 11 deep; at most ${MAX_DEPTH}`,
      extensions: { code: 'validation_error', details: { depth: 11, max_depth: MAX_DEPTH } },
    })
  })

  test('fragments count where they are spread; introspection does not count', async () => {
    const res = await gql(
      t,
      'query { ...A } fragment A on Query { threads { nodes { ...B } } } fragment B on Thread { emails { nodes { thread { emails { nodes { thread { emails { nodes { id } } } } } } } } }',
      { key: org.key },
    )
    expect(res.status).toBe(400)
    expect(res.body.errors[0].extensions.details.depth).toBe(11)
    // the standard introspection query nests ofType far deeper than the limit
    const deep = await gql(
      t,
      '{ __type(name: "Email") { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } }',
    )
    expect(deep.status).toBe(200)
  })
})

describe('cost', () => {
  test('first multiplies what it selects; over the limit is refused with the figures, variables included', async () => {
    const query = 'query($outer: Int, $inner: Int) { threads(first: $outer) { nodes { emails(first: $inner) { nodes { id thread { id } } } } } }'
    // 1 + outer * (1 node + 1 + inner * (1 node + 1 thread))
    expect((await gql(t, query, { key: org.key, variables: { outer: 40, inner: 60 } })).status).toBe(200)
    const res = await gql(t, query, { key: org.key, variables: { outer: 50, inner: 100 } })
    expect(res.status).toBe(400)
    const cost = 1 + 50 * (1 + 1 + 100 * 2)
    expect(res.body.errors[0].extensions).toEqual({ code: 'validation_error', details: { cost, max_cost: MAX_COST } })
    expect(res.body.errors[0].message).toStartWith(`query: could read up to ${cost} objects; at most ${MAX_COST}`)
  })

  test('aliases add up', async () => {
    const one = 'emails(first: 100) { nodes { thread { id } } }'
    const aliases = Array.from({ length: 30 }, (_, i) => `a${i}: ${one}`).join(' ')
    const res = await gql(t, `{ ${aliases} }`, { key: org.key })
    expect(res.status).toBe(400)
    expect(res.body.errors[0].extensions.details.cost).toBe(30 * (1 + 100 * 2))
  })

  test('first outside 1..100 is a field error naming first', async () => {
    const res = await gql(t, '{ emails(first: 500) { totalCount } }', { key: org.key })
    expect(res.body.errors[0]).toMatchObject({ path: ['emails'], message: 'first: must be 1 to 100', extensions: { code: 'validation_error' } })
  })
})

// The embedded fallback serves one connection: a second one, to count statements, needs a server.
const onServer = (await testDatabase()).kind === 'postgres'

describe.skipIf(!onServer)('batch loading', () => {
  let counted: TestApp['request']
  let statements: string[] = []
  let client: postgres.Sql

  beforeAll(async () => {
    const db = await testDatabase()
    client = postgres(db.url, {
      max: 2,
      onnotice: () => {},
      types: { bigint: postgres.BigInt },
      transform: { undefined: null },
      debug: (_c, query) => void statements.push(query),
    })
    const ctx = createContext(testConfig(), client, new ServerKeys(TEST_SECRET), { plugins: PLUGINS, resolver: memoryResolver({}) })
    const app = createApp(ctx)
    counted = async (method, path, opts = {}) => {
      const res = await app.handle(
        new Request(`http://api.test.local${path}`, {
          method,
          headers: { authorization: `Bearer ${opts.key}`, 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9' },
          body: JSON.stringify(opts.body),
        }),
      )
      return { status: res.status, headers: res.headers, body: await res.json() }
    }
  })
  afterAll(() => client.end())

  /** An organization with `threads` conversations of two messages each (the second a reply). */
  async function orgWithThreads(threads: number) {
    const o = await createOrg()
    const address = await managedAddress(t.ctx, o.orgId)
    for (let i = 0; i < threads; i++) {
      const id = `<${unique()}@sender.example>`
      for (const [subject, headers] of [
        [`topic ${i}`, {}],
        [`Re: topic ${i}`, { 'In-Reply-To': id }],
      ] as const) {
        const raw = new TextEncoder().encode(
          rfc822(
            {
              From: 'sam@sender.example',
              To: address,
              Subject: subject,
              'Message-ID': subject.startsWith('Re') ? `<${unique()}@sender.example>` : id,
              ...headers,
            },
            `text of ${subject}`,
          ),
        )
        await ingest(t.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo: [address], remoteIp: '192.0.2.1', helo: 'sender.example', tls: false })
      }
    }
    return o
  }

  const NESTED = '{ threads(first: 50) { totalCount nodes { subject emails(first: 5) { totalCount nodes { subject text thread { messageCount } } } } } }'

  async function statementsOf(o: TestOrg) {
    await counted('POST', '/graphql', { key: o.key, body: { query: '{ apiVersion }' } }) // the credential is resolved and cached
    statements = []
    const res = await counted('POST', '/graphql', { key: o.key, body: { query: NESTED } })
    expect(res.body.errors).toBeUndefined()
    // what the driver asks for itself (array types, once per connection) and rate-limit leases are not the query's
    return { data: res.body.data, statements: statements.filter(q => !/pg_catalog|rate_limit_take/.test(q)) }
  }

  test('a nested query runs the same statements for 3 threads as for 12: no N+1', async () => {
    const small = await statementsOf(await orgWithThreads(3))
    const large = await statementsOf(await orgWithThreads(12))
    expect(small.data.threads.totalCount).toBe(3)
    expect(large.data.threads.totalCount).toBe(12)
    for (const thread of large.data.threads.nodes) {
      expect(thread.emails.totalCount).toBe(2)
      expect(thread.emails.nodes.map((e: { subject: string }) => e.subject)).toEqual([`Re: ${thread.subject}`, thread.subject])
      expect(thread.emails.nodes[1].text).toBe(`text of ${thread.subject}\n`)
      expect(thread.emails.nodes[0].thread.messageCount).toBe(2)
    }
    // the list (a first page that holds them all is its own total); the messages of every thread and their totals; the full messages; their threads
    expect(large.statements.length, large.statements.join('\n---\n')).toBe(small.statements.length)
    expect(large.statements.length, large.statements.join('\n---\n')).toBe(5)
  })
})
