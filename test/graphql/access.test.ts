/**
 * Who sees what through /graphql: anonymous callers the schema only, every caller queries only,
 * an organization its own data only, an agent connection key only the mail of its address (the
 * REST allow-list, field by field).
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { unique } from '../helpers/identity'
import { managedAddress, rfc822 } from '../helpers/mail'
import { memoryResolver } from '../../src/dns/resolver'
import { ingest } from '../../src/mail/inbound/ingest'
import { errorCodes, gql, gqlData } from './helpers'

let t: TestApp
let alice: TestOrg
let bob: TestOrg
let bound: string
let sibling: string
let connKey: string
const ids: Record<string, string> = {}

async function inbound(org: TestOrg, rcptTo: string[], subject: string): Promise<string> {
  const raw = new TextEncoder().encode(
    rfc822({ From: 'Sam <sam@sender.example>', To: rcptTo.join(', '), Subject: subject, 'Message-ID': `<${unique()}@sender.example>` }, 'hello'),
  )
  const result = await ingest(t.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo, remoteIp: '192.0.2.1', helo: 'sender.example', tls: false })
  return result.stored.find(s => s.orgId === org.orgId)!.id
}

beforeAll(async () => {
  t = await testApp({}, { resolver: memoryResolver({}) })
  alice = await createOrg()
  bob = await createOrg()
  bound = await managedAddress(t.ctx, alice.orgId)
  sibling = await managedAddress(t.ctx, alice.orgId)
  const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: alice.key, body: { address: bound } }), 201)
  connKey = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
  ids.toBound = await inbound(alice, [bound], 'to the bound address')
  ids.toSibling = await inbound(alice, [sibling], 'to the sibling')
  ids.inbox = expectOk(await t.request('GET', '/v1/inboxes', { key: alice.key }))[0].id
  ids.thread = expectOk(await t.request('GET', `/v1/emails/${ids.toBound}`, { key: alice.key })).thread_id
})

describe('anonymous callers see the schema only', () => {
  test('a data field is 401 unauthorized with the WWW-Authenticate challenge, whichever way it is selected', async () => {
    for (const query of [
      '{ emails { totalCount } }',
      '{ apiVersion account { plan } }',
      '{ ...Q } fragment Q on Query { viewer { orgId } }',
      'query { ... on Query { inboxes { totalCount } } }',
    ]) {
      for (const method of ['GET', 'POST'] as const) {
        const res = await gql(t, query, { method })
        expect(res.status, query).toBe(401)
        expect(res.body.data).toBeUndefined()
        expect(res.body.errors[0].extensions.code).toBe('unauthorized')
        expect(res.headers.get('www-authenticate')).toContain('resource_metadata="')
      }
    }
  })

  test('an invalid credential is 401 even for the schema', async () => {
    const res = await gql(t, '{ __schema { queryType { name } } }', { key: 'svc_not-a-key' })
    expect(res.status).toBe(401)
    expect(errorCodes(res)).toEqual({ '-': 'unauthorized' })
  })
})

describe('queries only', () => {
  test('mutations and subscriptions are refused over POST and GET, before anything runs', async () => {
    for (const query of ['mutation { apiVersion }', 'subscription { apiVersion }', 'mutation Send { sendMail(to: "x") { id } }']) {
      for (const method of ['GET', 'POST'] as const) {
        const res = await gql(t, query, { key: alice.key, method })
        expect(res.status, `${method} ${query}`).toBe(400)
        expect(res.body.errors[0].extensions.code).toBe('validation_error')
        expect(res.body.errors[0].message).toContain('read-only')
      }
    }
  })

  test('a document holding a mutation is refused whichever operation is picked; operationName picks among queries', async () => {
    for (const operationName of ['Read', 'Write']) {
      const res = await gql(t, 'query Read { apiVersion } mutation Write { apiVersion }', { key: alice.key, operationName })
      expect(res.status).toBe(400)
      expect(res.body.errors[0].message).toContain('mutation operations are not served')
    }
    expect(await gqlData(t, 'query A { apiVersion } query B { __typename }', { key: alice.key, operationName: 'B' })).toEqual({ __typename: 'Query' })
    const res = await gql(t, 'query A { apiVersion } query B { __typename }', { key: alice.key })
    expect(res.status).toBe(400)
    expect(res.body.errors[0].message).toBe('operationName: is required when the document has several operations')
  })

  test('body errors before GraphQL runs answer in the GraphQL shape too', async () => {
    const big = await t.request('POST', '/graphql', { key: alice.key, body: { query: `{ apiVersion }${' '.repeat(70_000)}` } })
    expect(big.status).toBe(413)
    expect(errorCodes(big)).toEqual({ '-': 'payload_too_large' })
    const text = await t.request('POST', '/graphql', { key: alice.key, body: '{ apiVersion }', headers: { 'content-type': 'application/graphql' } })
    expect(text.status).toBe(415)
    expect(errorCodes(text)).toEqual({ '-': 'unsupported_media_type' })
    const noQuery = await t.request('POST', '/graphql', { key: alice.key, body: { variables: {} } })
    expect(noQuery.status).toBe(400)
    expect(noQuery.body.errors[0]).toMatchObject({ message: expect.stringContaining('query'), extensions: { code: 'validation_error' } })
  })

  test('a syntax error and an unknown field are validation_error with locations', async () => {
    for (const query of ['{ emails { ', '{ nope }']) {
      const res = await gql(t, query, { key: alice.key })
      expect(res.status).toBe(400)
      expect(res.body.errors[0].extensions.code).toBe('validation_error')
      expect(res.body.errors[0].locations[0].line).toBe(1)
    }
  })
})

describe('isolation across organizations', () => {
  test("another organization's objects are not_found and its lists are not ours", async () => {
    const own = await gqlData(
      t,
      `{ email(id: "${ids.toBound}") { subject } thread(id: "${ids.thread}") { messageCount } inbox(id: "${ids.inbox}") { address } emails { totalCount } threads { totalCount } }`,
      { key: alice.key },
    )
    expect(own.email.subject).toBe('to the bound address')
    expect(own.thread.messageCount).toBe(1)
    expect(own.emails.totalCount).toBe(2)

    const res = await gql(
      t,
      `{ email(id: "${ids.toBound}") { subject } thread(id: "${ids.thread}") { id } inbox(id: "${ids.inbox}") { id } emails { totalCount nodes { id } } threads { totalCount } inboxes { totalCount } }`,
      { key: bob.key },
    )
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      email: null,
      thread: null,
      inbox: null,
      emails: { totalCount: 0, nodes: [] },
      threads: { totalCount: 0 },
      inboxes: { totalCount: 0 },
    })
    expect(errorCodes(res)).toEqual({ email: 'not_found', thread: 'not_found', inbox: 'not_found' })
  })

  test("a cursor of another list, or another organization's list, is refused naming after", async () => {
    const page = await gqlData(t, '{ emails(first: 1) { pageInfo { endCursor hasNextPage } } }', { key: alice.key })
    expect(page.emails.pageInfo.hasNextPage).toBe(true)
    const res = await gql(t, 'query($after: String) { threads(after: $after) { totalCount } }', {
      key: alice.key,
      variables: { after: page.emails.pageInfo.endCursor },
    })
    expect(errorCodes(res)).toEqual({ threads: 'validation_error' })
    expect(res.body.errors[0].message).toStartWith('after: ')
    const inboxCursor = (await gqlData(t, '{ inboxes(first: 1) { pageInfo { endCursor } } }', { key: alice.key })).inboxes.pageInfo.endCursor
    // alice's cursor is of alice's list (its scope names the organization, as in REST)
    const foreignList = await gql(t, `{ inboxes(after: "${inboxCursor}") { totalCount nodes { id } } }`, { key: bob.key })
    expect(errorCodes(foreignList)).toEqual({ inboxes: 'validation_error' })
    expect(foreignList.body.errors[0].message).toStartWith('after: ')
  })

  test('ids that are not UUIDs are validation_error naming the argument', async () => {
    const res = await gql(t, '{ email(id: "1 or 1=1") { id } }', { key: alice.key })
    expect(errorCodes(res)).toEqual({ email: 'validation_error' })
    expect(res.body.errors[0].message).toBe('id: must be a UUID')
  })
})

describe('agent connection keys: the REST allow-list, field by field', () => {
  test('mail of the bound address only', async () => {
    const data = await gqlData(t, `{ emails { totalCount nodes { id subject text } } }`, { key: connKey })
    expect(data.emails.totalCount).toBe(1)
    expect(data.emails.nodes).toEqual([{ id: ids.toBound, subject: 'to the bound address', text: 'hello\n' }])
    expect((await gqlData(t, `{ email(id: "${ids.toBound}") { id } }`, { key: connKey })).email.id).toBe(ids.toBound)
    expect(errorCodes(await gql(t, `{ email(id: "${ids.toSibling}") { id } }`, { key: connKey }))).toEqual({ email: 'not_found' })
  })

  test("account, viewer, threads, inboxes and an email's thread are forbidden, the rest of the query still answers", async () => {
    const res = await gql(
      t,
      `{ account { plan } viewer { orgId } threads { totalCount } inboxes { totalCount } memories { totalCount } emails { nodes { id thread { id } } } }`,
      { key: connKey },
    )
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      account: null,
      viewer: null,
      threads: null,
      inboxes: null,
      memories: null,
      emails: { nodes: [{ id: ids.toBound, thread: null }] },
    })
    expect(errorCodes(res)).toEqual({
      account: 'forbidden',
      viewer: 'forbidden',
      threads: 'forbidden',
      inboxes: 'forbidden',
      memories: 'forbidden',
      'emails.nodes.0.thread': 'forbidden',
    })
  })
})
