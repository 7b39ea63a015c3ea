/**
 * The SDK against the service on a real loopback port: answers unwrapped and typed, errors
 * thrown by code, lists iterated across pages, Idempotency-Key honoured, and the long-poll
 * answering when mail arrives over SMTP.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AgentMail, AgentMailError, isAgentMailError } from '@agent-mail/sdk'
import { createOrg, type TestOrg } from '../helpers/app'
import { cliService, type CliService } from '../cli-client/helpers'

let s: CliService
let org: TestOrg
let mail: AgentMail

beforeAll(async () => {
  s = await cliService()
  org = await createOrg()
  mail = new AgentMail({ baseUrl: s.origin, apiKey: org.key })
})
afterAll(async () => {
  await s.stop()
})

async function caught(promise: Promise<unknown>): Promise<AgentMailError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof AgentMailError) return error
    throw error
  }
  throw new Error('expected an AgentMailError')
}

describe('answers', () => {
  test('come unwrapped from the envelope', async () => {
    const me = await mail.get('/v1/whoami')
    expect(me.org_id).toBe(org.orgId)
    const inbox = await mail.post('/v1/inboxes', { body: { display_name: 'SDK' } })
    expect(inbox.address).toMatch(/@agents\.test\.local$/)
    const again = await mail.get('/v1/inboxes/{id}', { params: { path: { id: inbox.id } } })
    expect(again).toMatchObject({ id: inbox.id, display_name: 'SDK' })
  })

  test('the credential may be a function, asked at each call (a token that is refreshed)', async () => {
    let asked = 0
    const refreshing = new AgentMail({ baseUrl: s.origin, apiKey: async () => (asked++, org.key) })
    await refreshing.get('/v1/whoami')
    await refreshing.get('/v1/whoami')
    expect(asked).toBe(2)
  })

  test('request() also gives the page meta and the response headers', async () => {
    const { data, meta, response } = await mail.request('get', '/v1/inboxes', { params: { query: { limit: 1 } } })
    expect(data).toHaveLength(1)
    expect(meta).toMatchObject({ limit: 1 })
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
  })
})

describe('errors', () => {
  test('a bad credential is unauthorized (401)', async () => {
    const e = await caught(new AgentMail({ baseUrl: s.origin, apiKey: 'svc_not_a_real_key' }).get('/v1/whoami'))
    expect({ code: e.code, status: e.status }).toEqual({ code: 'unauthorized', status: 401 })
  })

  test('a bad field is validation_error (400) naming the field', async () => {
    const e = await caught(mail.post('/v1/inboxes', { body: { display_name: 'x'.repeat(10_000) } }))
    expect({ code: e.code, status: e.status }).toEqual({ code: 'validation_error', status: 400 })
    expect(e.message).toMatch(/^display_name: /)
    expect(isAgentMailError(e, 'validation_error')).toBe(true)
    expect(isAgentMailError(e, 'not_found')).toBe(false)
  })

  test("another organization's inbox is not_found (404)", async () => {
    const other = await createOrg()
    const theirs = await new AgentMail({ baseUrl: s.origin, apiKey: other.key }).post('/v1/inboxes', { body: {} })
    const e = await caught(mail.get('/v1/inboxes/{id}', { params: { path: { id: theirs.id } } }))
    expect({ code: e.code, status: e.status }).toEqual({ code: 'not_found', status: 404 })
  })

  test('no service at the address is network_error (status 0)', async () => {
    const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const dead = `http://127.0.0.1:${probe.port}`
    await probe.stop(true)
    const e = await caught(new AgentMail({ baseUrl: dead, apiKey: org.key }).get('/v1/whoami'))
    expect({ code: e.code, status: e.status }).toEqual({ code: 'network_error', status: 0 })
  })

  test('an answer without the envelope is invalid_response with its status', async () => {
    const proxy = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('<html>Bad gateway</html>', { status: 502 }) })
    try {
      const e = await caught(new AgentMail({ baseUrl: `http://127.0.0.1:${proxy.port}`, apiKey: org.key }).get('/v1/whoami'))
      expect({ code: e.code, status: e.status }).toEqual({ code: 'invalid_response', status: 502 })
    } finally {
      await proxy.stop(true)
    }
  })
})

describe('lists', () => {
  test('for await walks every page with the cursor', async () => {
    const own = await createOrg()
    const client = new AgentMail({ baseUrl: s.origin, apiKey: own.key })
    const made = new Set<string>()
    for (let i = 0; i < 5; i++) made.add((await client.post('/v1/inboxes', { body: { display_name: `n${i}` } })).id)
    const first = await client.page('/v1/inboxes', { params: { query: { limit: 2 } } })
    expect(first.items).toHaveLength(2)
    expect(first.cursor).toBeString()
    const seen: string[] = []
    for await (const inbox of client.list('/v1/inboxes', { params: { query: { limit: 2 } } })) seen.push(inbox.id)
    expect(new Set(seen)).toEqual(made)
    expect(seen).toHaveLength(5)
  })
})

describe('sending', () => {
  test('the same idempotencyKey sends once and answers the first result again', async () => {
    const inbox = await mail.post('/v1/inboxes', { body: {} })
    const send = () =>
      mail.post('/v1/send-mail', {
        body: { from: inbox.address, to: 'someone@example.com', subject: 'Once', body_text: 'only once' },
        idempotencyKey: `sdk-${inbox.id}`,
      })
    const first = await send()
    const second = await send()
    expect(second.id).toBe(first.id)
    expect([first.idempotent_replay, second.idempotent_replay]).toEqual([false, true])
  })

  test('respondAsync sends Prefer: respond-async: 202 with Preference-Applied, relayed after', async () => {
    const inbox = await mail.post('/v1/inboxes', { body: {} })
    const before = s.relay.messages.length
    const { data, response } = await mail.request('post', '/v1/send-mail', {
      body: { from: inbox.address, to: 'later@example.com', subject: 'Later', body_text: 'after the answer' },
      respondAsync: true,
    })
    expect(response.status).toBe(202)
    expect(response.headers.get('preference-applied')).toBe('respond-async')
    expect(data).toMatchObject({ status: 'queued', accepted: ['later@example.com'] })
    expect((await s.relay.waitFor(before + 1)).at(-1)!.to).toEqual(['later@example.com'])
  })
})

describe('the long-poll', () => {
  test('waitForEmail answers when mail arrives over SMTP, and [] when none does in time', async () => {
    const inbox = await mail.post('/v1/inboxes', { body: {} })
    expect(await mail.waitForEmail({ address: inbox.address }, { timeoutSeconds: 1 })).toEqual([])
    const waiting = mail.waitForEmail({ address: inbox.address }, { timeoutSeconds: 20 })
    await Bun.sleep(200)
    await s.smtp({ from: 'you@example.com', to: inbox.address, subject: 'Wake up', text: 'hello' })
    const emails = await waiting
    expect(emails.map(e => e.subject)).toEqual(['Wake up'])
  }, 30_000)

  test('watchEmails reads a burst larger than its page whole, oldest first', async () => {
    const inbox = await mail.post('/v1/inboxes', { body: {} })
    const since = new Date(Date.now() - 1000).toISOString()
    for (const subject of ['a', 'b', 'c']) {
      await s.smtp({ from: 'you@example.com', to: inbox.address, subject, text: subject })
      await Bun.sleep(5)
    }
    const subjects: string[] = []
    for await (const email of mail.watchEmails({ address: inbox.address, since, limit: 2 }, { waitSeconds: 1 })) {
      subjects.push(email.subject)
      if (subjects.length === 3) break
    }
    expect(subjects).toEqual(['a', 'b', 'c'])
  }, 30_000)

  test('watchEmails yields each new message, oldest first, until the loop stops', async () => {
    const inbox = await mail.post('/v1/inboxes', { body: {} })
    const subjects: string[] = []
    const watching = (async () => {
      for await (const email of mail.watchEmails({ address: inbox.address }, { waitSeconds: 5 })) {
        subjects.push(email.subject)
        if (subjects.length === 2) break
      }
    })()
    await Bun.sleep(200)
    await s.smtp({ from: 'you@example.com', to: inbox.address, subject: 'one', text: '1' })
    await Bun.sleep(50)
    await s.smtp({ from: 'you@example.com', to: inbox.address, subject: 'two', text: '2' })
    await watching
    expect(subjects).toEqual(['one', 'two'])
  }, 30_000)
})
