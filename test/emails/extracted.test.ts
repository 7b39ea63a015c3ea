/**
 * The reply without its quotes, end to end: each fixture of test/fixtures/replies is sent over a
 * real SMTP socket, extracted once at ingest and stored, then read through REST (the message, and
 * the list with include_extracted), a webhook receiver on 127.0.0.1, MCP and GraphQL, and found
 * by search through its new words.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/client'
import { contentDiscardCommand } from '../../src/admin/commands'
import { JOB_KINDS } from '../../src/job-kinds'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { createOrg, testSql, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { gqlData } from '../graphql/helpers'
import { mcpClient } from '../mcp/helpers'
import { EXPECTED_TEXT, REPLY_FIXTURES } from '../helpers/replies'

const FIXTURES = Object.keys(EXPECTED_TEXT)

let h: InboundHarness
let worker: Worker
let receiver: Receiver
let org: TestOrg
let address: string
let client: Client
/** each fixture's stored email id, by the fixture's name */
const ids = new Map<string, string>()

/** A fixture as sent over SMTP: CRLF line endings, addressed to `to` in its envelope. */
async function send(name: string, to: string) {
  const raw = (await Bun.file(`${REPLY_FIXTURES}/${name}.eml`).text()).replace(/\r?\n/g, '\r\n')
  await h.transport.sendMail({ envelope: { from: 'sender@replies.example', to: [to] }, raw })
}

beforeAll(async () => {
  h = await inboundHarness({ WEBHOOK_ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '1,1' })
  worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  receiver = startReceiver()
  org = await createOrg()
  address = await managedAddress(h.ctx, org.orgId)
  expectOk(await h.request('POST', '/v1/endpoints', { key: org.key, body: { url: receiver.url('/replies') } }), 201)
  for (const name of FIXTURES) await send(name, address)
  const sql = await testSql()
  const rows = await sql<{ id: string; message_id: string }[]>`select id, message_id from emails where org_id = ${org.orgId}`
  for (const name of FIXTURES) {
    const messageId = (await Bun.file(`${REPLY_FIXTURES}/${name}.eml`).text()).match(/^Message-I[dD]: (<[^>]+>)/m)![1]
    ids.set(name, rows.find(r => r.message_id === messageId)!.id)
  }
  client = await mcpClient(h, org.key, 'modern')
})
afterAll(async () => {
  await client.close()
  await worker.stop(1000)
  receiver.stop()
  await h.stop()
})

describe('GET /v1/emails/{id}', () => {
  test('answers each reply without its quotes, and the full bodies as they were', async () => {
    for (const name of FIXTURES) {
      const email = await h.email(org, ids.get(name)!)
      expect(email.extracted_text, name).toBe(EXPECTED_TEXT[name]!)
      if (name !== 'forwarded' && name !== 'html-only') expect(email.text.length, name).toBeGreaterThan(email.extracted_text.length)
      expect(email.extracted_html === null, name).toBe(email.html === null)
    }
    const gmail = await h.email(org, ids.get('gmail')!)
    expect(gmail.html).toContain('Could you check the quarterly numbers')
    expect(gmail.extracted_html).toContain('Ship the report on Friday')
    expect(gmail.extracted_html).not.toContain('Could you check the quarterly numbers')
  })

  test("another organization's message is not_found", async () => {
    const other = await createOrg()
    expectError(await h.request('GET', `/v1/emails/${ids.get('gmail')}`, { key: other.key }), 404, 'not_found')
  })
})

describe('GET /v1/emails', () => {
  test('carries the new content only with include_extracted=true', async () => {
    const plain = expectOk(await h.request('GET', '/v1/emails?limit=100', { key: org.key }))
    expect(plain).toHaveLength(FIXTURES.length)
    for (const item of plain) expect(item).not.toHaveProperty('extracted_text')
    const withNew = expectOk(await h.request('GET', '/v1/emails?limit=100&include_extracted=true', { key: org.key }))
    for (const name of FIXTURES) {
      const item = withNew.find((e: { id: string }) => e.id === ids.get(name))
      expect(item.extracted_text, name).toBe(EXPECTED_TEXT[name]!)
      expect(item).toHaveProperty('extracted_html')
      expect(item).not.toHaveProperty('text')
    }
  })

  test('a cursor continues the list with or without the flag', async () => {
    const first = await h.request('GET', '/v1/emails?limit=2&include_extracted=true', { key: org.key })
    const next = await h.request('GET', `/v1/emails?limit=2&cursor=${encodeURIComponent(first.body.meta.cursor)}`, { key: org.key })
    expect(next.status).toBe(200)
    expect(next.body.data[0]).not.toHaveProperty('extracted_text')
  })

  test('a flag that is not a boolean is a validation_error naming it', async () => {
    expectError(await h.request('GET', '/v1/emails?include_extracted=maybe', { key: org.key }), 400, 'validation_error', /^include_extracted: /)
  })
})

describe('the OpenAPI document', () => {
  test('lists the flag, the fields of the message and the list, and those of the webhook payload', async () => {
    const doc = (await h.request('GET', '/v1/openapi')).body
    const list = doc.paths['/v1/emails'].get
    expect(list.parameters.find((p: { name: string }) => p.name === 'include_extracted')).toMatchObject({ in: 'query', schema: { type: 'boolean' } })
    const text = JSON.stringify(doc)
    const email = doc.paths['/v1/emails/{id}'].get.responses['200'].content['application/json'].schema
    expect(JSON.stringify(email)).toContain('extracted_text')
    expect(JSON.stringify(list.responses['200'])).toContain('extracted_html')
    expect(JSON.stringify(doc.webhooks)).toContain('extracted_text')
    expect(text).toContain('the reply without its quotes')
  })
})

describe('the webhook payload', () => {
  test('email.received carries extracted_text and extracted_html next to the bodies', async () => {
    const requests = await receiver.waitFor(FIXTURES.length, '/replies')
    for (const name of FIXTURES) {
      const event = requests.map(r => r.json).find(e => e.email.id === ids.get(name))
      expect(event.event, name).toBe('email.received')
      expect(event.email.parsed.extracted_text, name).toBe(EXPECTED_TEXT[name]!)
      expect(event.email.parsed.extracted_html === null, name).toBe(event.email.parsed.body_html === null)
    }
  })
})

describe('MCP', () => {
  test('get_email and list_emails (include_extracted) answer the new content', async () => {
    const one = (await client.callTool({ name: 'get_email', arguments: { email_id: ids.get('outlook-web') } })) as {
      isError?: boolean
      structuredContent: { extracted_text: string; extracted_html: string }
    }
    expect(one.isError).toBeFalsy()
    expect(one.structuredContent.extracted_text).toBe(EXPECTED_TEXT['outlook-web']!)
    expect(one.structuredContent.extracted_html).not.toContain('divRplyFwdMsg')
    const list = (await client.callTool({ name: 'list_emails', arguments: { include_extracted: true } })) as {
      structuredContent: { items: { id: string; extracted_text?: string }[] }
    }
    expect(list.structuredContent.items.find(e => e.id === ids.get('french'))?.extracted_text).toBe(EXPECTED_TEXT.french!)
  })
})

describe('GraphQL', () => {
  test('Email has extractedText and extractedHtml, on one message and in the list', async () => {
    const data = await gqlData(h, `{ email(id: "${ids.get('thunderbird')}") { extractedText extractedHtml text } }`, { key: org.key })
    expect(data.email.extractedText).toBe(EXPECTED_TEXT.thunderbird!)
    expect(data.email.extractedHtml).not.toContain('moz-cite-prefix')
    expect(data.email.text).toContain('Can we move the server migration')
    const list = await gqlData(h, '{ emails(first: 50) { nodes { id extractedText } } }', { key: org.key })
    expect(list.emails.nodes.find((e: { id: string }) => e.id === ids.get('german')).extractedText).toBe(EXPECTED_TEXT.german!)
  })
})

describe('search', () => {
  test("weighs the new content first (A), finds words of the quotes too, and finds an HTML-only reply's words", async () => {
    const sql = await testSql()
    const [row] = await sql<{ v: string }[]>`select search::text as v from emails where id = ${ids.get('gmail')!}`
    expect(row!.v).toMatch(/'friday':\d+A/)
    expect(row!.v).toMatch(/'quarterly':[\d,]+(?: |$)/)
    const search = async (q: string) =>
      expectOk(await h.request('GET', `/v1/search?q=${encodeURIComponent(q)}`, { key: org.key })).map((e: { id: string }) => e.id)
    expect(await search('lighthouse')).toEqual([ids.get('html-only')])
    expect(await search('quarterly')).toContain(ids.get('gmail'))
  })
})

describe('sent mail and discarded content', () => {
  test("a sent message's copy has no extracted content; discarding content removes it", async () => {
    expectOk(
      await h.request('POST', '/v1/send-mail', { key: org.key, body: { from: address, to: 'someone@elsewhere.example', subject: 'Out', body_text: 'x' } }),
    )
    const sql = await testSql()
    const [copy] = await sql<{ extracted_text: string | null }[]>`
      select extracted_text from emails where org_id = ${org.orgId} and direction = 'outbound' and subject = 'Out'`
    expect(copy!.extracted_text).toBeNull()
    await contentDiscardCommand(sql, org.orgId, 'on')
    expectOk(await h.request('POST', `/v1/emails/${ids.get('spanish')}/discard`, { key: org.key }))
    const email = await h.email(org, ids.get('spanish')!)
    expect(email).toMatchObject({ text: null, extracted_text: null, extracted_html: null, content_discarded: true })
  })
})
