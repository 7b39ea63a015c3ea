/**
 * Labels and read state end to end: mail received over a real SMTP socket is inbound and
 * unread, a send's copy is sent; labels added and taken off one message, a thread and a batch;
 * lists and threads filtered by one label and by two; the long-poll with a label; another
 * organization's ids are 404, a connection key reaches only its address's mail; bad input is a
 * validation_error naming its field; every change is in the changes feed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'

let h: InboundHarness
let org: TestOrg
let address: string
let sibling: string

interface Listed {
  id: string
  thread_id: string
  subject: string
  labels: string[]
}

const get = async (path: string, key = org.key) => expectOk(await h.request('GET', path, { key }))
const post = (path: string, body: unknown, key = org.key) => h.request('POST', path, { key, body })
const list = async (query: string, key = org.key) => (await get(`/v1/emails?${query}`, key)) as Listed[]
const subjects = (rows: { subject: string }[]) => rows.map(r => r.subject)
const receive = async (subject: string, to = address, headers: Record<string, string> = {}) => {
  await h.transport.sendMail({ from: 'sam@sender.example', to, subject, text: `about ${subject}`, headers })
  return (await list(`address=${encodeURIComponent(to)}&limit=1`))[0]!
}
const cursorNow = async (key = org.key) => (await get('/v1/changes/cursor', key)).cursor as string
const changesSince = async (cursor: string, key = org.key) =>
  ((await get(`/v1/changes?cursor=${cursor}&types=email.labels_changed,label.*`, key)) as { type: string; resource: { id: string }; data: any }[]).map(c => ({
    type: c.type,
    id: c.resource.id,
    data: c.data,
  }))

beforeAll(async () => {
  h = await inboundHarness()
  org = await createOrg()
  address = await managedAddress(h.ctx, org.orgId)
  sibling = await managedAddress(h.ctx, org.orgId)
})
afterAll(() => h.stop())

describe('system labels', () => {
  test('mail received over SMTP is inbound and unread; a send is sent', async () => {
    const received = await receive('Arrived')
    expect(received.labels).toEqual(['inbound', 'unread'])
    expect((await get(`/v1/emails/${received.id}`)).labels).toEqual(['inbound', 'unread'])
    const send = expectOk(await post('/v1/send-mail', { from: address, to: 'someone@example.com', subject: 'Went out', body_text: 'x' }))
    const [sent] = await list(`address=${address}&direction=outbound&limit=1`)
    expect(sent!.subject).toBe('Went out')
    expect(sent!.labels).toEqual(['sent'])
    expect(send).toBeDefined()
  })

  test('GET /v1/labels lists the system labels, then the custom ones by name', async () => {
    const other = await createOrg()
    expect(await get('/v1/labels', other.key)).toEqual([
      { name: 'inbound', system: true, created_at: null },
      { name: 'sent', system: true, created_at: null },
      { name: 'unread', system: true, created_at: null },
      { name: 'read', system: true, created_at: null },
    ])
  })
})

describe('one message', () => {
  test('marking read takes unread off, marking unread again takes read off; each change is an email.labels_changed change', async () => {
    const m = await receive('Read me')
    const start = await cursorNow()
    expect(expectOk(await post(`/v1/emails/${m.id}/labels`, { add: ['read'] }))).toEqual({ id: m.id, thread_id: m.thread_id, labels: ['inbound', 'read'] })
    // the same again changes nothing and records nothing
    expect(expectOk(await post(`/v1/emails/${m.id}/labels`, { add: ['read'] })).labels).toEqual(['inbound', 'read'])
    expect(expectOk(await post(`/v1/emails/${m.id}/labels`, { remove: ['read'] })).labels).toEqual(['inbound', 'unread'])
    expect(await changesSince(start)).toEqual([
      {
        type: 'email.labels_changed',
        id: m.id,
        data: { email_id: m.id, thread_id: m.thread_id, labels: ['inbound', 'read'], added: ['read'], removed: ['unread'] },
      },
      {
        type: 'email.labels_changed',
        id: m.id,
        data: { email_id: m.id, thread_id: m.thread_id, labels: ['inbound', 'unread'], added: ['unread'], removed: ['read'] },
      },
    ])
  })

  test('custom labels: created, added with read, taken off, deleted from every message', async () => {
    const start = await cursorNow()
    expect(expectOk(await post('/v1/labels', { name: 'follow-up' }), 201)).toMatchObject({ name: 'follow-up', system: false })
    // creating it again answers what exists
    expect(expectOk(await post('/v1/labels', { name: 'follow-up' }), 200).name).toBe('follow-up')
    const m = await receive('Custom')
    expect(expectOk(await post(`/v1/emails/${m.id}/labels`, { add: ['follow-up', 'read'] })).labels).toEqual(['follow-up', 'inbound', 'read'])
    expect((await get('/v1/labels')).map((l: { name: string }) => l.name)).toContain('follow-up')
    expect(expectOk(await h.request('DELETE', '/v1/labels/follow-up', { key: org.key }))).toEqual({ name: 'follow-up', deleted: true, messages: 1 })
    expect((await get(`/v1/emails/${m.id}`)).labels).toEqual(['inbound', 'read'])
    expectError(await h.request('DELETE', '/v1/labels/follow-up', { key: org.key }), 404, 'not_found')
    expect((await changesSince(start)).map(c => c.type)).toEqual(['label.created', 'email.labels_changed', 'label.deleted'])
  })

  test("another organization's message, thread or label is 404", async () => {
    const m = await receive('Private')
    const other = await createOrg()
    expectError(await post(`/v1/emails/${m.id}/labels`, { add: ['read'] }, other.key), 404, 'not_found')
    expectError(await post(`/v1/threads/${m.thread_id}/labels`, { add: ['read'] }, other.key), 404, 'not_found')
    expectError(await post('/v1/emails/labels', { ids: [m.id], add: ['read'] }, other.key), 404, 'not_found')
    expect((await get(`/v1/emails/${m.id}`)).labels).toEqual(['inbound', 'unread'])
  })
})

describe('concurrency', () => {
  test('concurrent relabels of the same messages each see the last one: the changes chain without a gap or a deadlock', async () => {
    const a = await receive('Busy A')
    const b = await receive('Busy B')
    const start = await cursorNow()
    // batches naming the two messages in opposite orders, marking read and unread in turn
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => post('/v1/emails/labels', { ids: i % 2 ? [a.id, b.id] : [b.id, a.id], add: [i % 3 ? 'read' : 'unread'] })),
    )
    for (const r of results) expectOk(r)
    const changes = await changesSince(start)
    for (const id of [a.id, b.id]) {
      const mine = changes.filter(c => c.id === id).map(c => c.data)
      // each change starts from the labels the one before left
      let labels = ['inbound', 'unread']
      for (const c of mine) {
        expect(
          labels
            .filter(l => !c.removed.includes(l))
            .concat(c.added)
            .sort(),
        ).toEqual(c.labels)
        expect(c.added.some((l: string) => labels.includes(l))).toBe(false)
        labels = c.labels
      }
      expect((await get(`/v1/emails/${id}`)).labels).toEqual(labels)
    }
  })
})

describe('validation', () => {
  test('names and changes are checked, each error naming its field', async () => {
    const m = await receive('Validate')
    const cases: [string, unknown, RegExp][] = [
      ['/v1/labels', { name: 'Work' }, /^name: must be 1 to 40 lowercase/],
      ['/v1/labels', { name: 'x'.repeat(41) }, /^name: /],
      ['/v1/labels', { name: 'unread' }, /^name: unread is a system label/],
      ['/v1/labels', {}, /^name: /],
      [`/v1/emails/${m.id}/labels`, {}, /^add: name at least one label/],
      [`/v1/emails/${m.id}/labels`, { add: ['sent'] }, /^add: sent is set by the service/],
      [`/v1/emails/${m.id}/labels`, { remove: ['inbound'] }, /^remove: inbound is set by the service/],
      [`/v1/emails/${m.id}/labels`, { add: ['read', 'unread'] }, /^add: read and unread exclude each other/],
      [`/v1/emails/${m.id}/labels`, { add: ['read'], remove: ['read'] }, /^remove: read is also in add/],
      [`/v1/emails/${m.id}/labels`, { add: ['never-made'] }, /^add: never-made is not a label of the organization/],
      [`/v1/emails/${m.id}/labels`, { add: ['Bad Name'] }, /^add\[0\]: must be 1 to 40 lowercase/],
      ['/v1/emails/labels', { ids: [], add: ['read'] }, /^ids: /],
      ['/v1/emails/labels', { ids: Array.from({ length: 101 }, () => m.id), add: ['read'] }, /^ids: /],
      ['/v1/emails/labels', { ids: ['nope'], add: ['read'] }, /^ids\[0\]: /],
    ]
    for (const [path, body, message] of cases) expectError(await post(path, body), 400, 'validation_error', message)
    expectError(
      await h.request('GET', '/v1/emails?label=unread&label=Not%20A%20Label', { key: org.key }),
      400,
      'validation_error',
      /^label\[1\]: must be 1 to 40/,
    )
    expectError(await h.request('DELETE', '/v1/labels/read', { key: org.key }), 400, 'validation_error', /^name: read is a system label/)
    // nothing of the above changed the message
    expect((await get(`/v1/emails/${m.id}`)).labels).toEqual(['inbound', 'unread'])
  })

  test('an organization keeps at most 100 custom labels', async () => {
    const other = await createOrg()
    await Promise.all(Array.from({ length: 100 }, (_, i) => post('/v1/labels', { name: `l${i}` }, other.key).then(r => expectOk(r, 201))))
    expectError(await post('/v1/labels', { name: 'one-more' }, other.key), 403, 'quota_exceeded')
    expect((await get('/v1/labels', other.key)).length).toBe(104)
  })
})

describe('threads, batches and filters', () => {
  let inbox: string
  let first: Listed
  let reply: Listed
  let lone: Listed

  beforeAll(async () => {
    const made = expectOk(await post('/v1/inboxes', {}), 201)
    inbox = made.address
    expectOk(await post('/v1/labels', { name: 'work' }), 201)
    expectOk(await post('/v1/labels', { name: 'urgent' }), 201)
    first = await receive('Plan', inbox, { 'Message-ID': '<plan-1@sender.example>' })
    reply = await receive('Re: Plan', inbox, { 'Message-ID': '<plan-2@sender.example>', 'In-Reply-To': '<plan-1@sender.example>' })
    lone = await receive('Lone', inbox)
    expect(reply.thread_id).toBe(first.thread_id)
  })

  test("a thread: labels on every message; its labels are the union of its messages'", async () => {
    const start = await cursorNow()
    const res = expectOk(await post(`/v1/threads/${first.thread_id}/labels`, { add: ['work', 'read'] }))
    expect(res.labels).toEqual(['inbound', 'read', 'work'])
    expect(res.emails.map((e: Listed) => e.id)).toEqual([first.id, reply.id])
    expect((await changesSince(start)).map(c => c.id)).toEqual([first.id, reply.id])
    // one message marked unread again: the thread is both read and unread
    expectOk(await post(`/v1/emails/${reply.id}/labels`, { add: ['unread'] }))
    const thread = await get(`/v1/threads/${first.thread_id}`)
    expect(thread.labels).toEqual(['inbound', 'read', 'unread', 'work'])
    expect(thread.emails.map((e: Listed) => e.labels)).toEqual([
      ['inbound', 'read', 'work'],
      ['inbound', 'unread', 'work'],
    ])
  })

  test('a batch: every message changed, all or nothing', async () => {
    const res = expectOk(await post('/v1/emails/labels', { ids: [lone.id, first.id, lone.id], add: ['urgent'] }))
    expect(res.emails.map((e: Listed) => [e.id, e.labels])).toEqual(
      [
        [lone.id, ['inbound', 'unread', 'urgent']],
        [first.id, ['inbound', 'read', 'urgent', 'work']],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    )
    // an unknown id fails the whole batch
    const unknown = '01900000-0000-7000-8000-000000000000'
    expectError(await post('/v1/emails/labels', { ids: [lone.id, unknown], remove: ['urgent'] }), 404, 'not_found', new RegExp(unknown))
    expect((await get(`/v1/emails/${lone.id}`)).labels).toContain('urgent')
  })

  test('label= filters the list and threads; two labels mean both', async () => {
    expect(subjects(await list(`address=${inbox}&label=unread`))).toEqual(['Lone', 'Re: Plan'])
    expect(subjects(await list(`address=${inbox}&label=urgent`))).toEqual(['Lone', 'Plan'])
    expect(subjects(await list(`address=${inbox}&label=urgent&label=unread`))).toEqual(['Lone'])
    expect(subjects(await list(`address=${inbox}&label=work&label=read`))).toEqual(['Plan'])
    expect(subjects(await list('label=work&label=unread'))).toEqual(['Re: Plan'])
    // threads: the union holds every label asked for, from one message or several
    const threads = async (q: string) => ((await get(`/v1/threads?${q}`)) as { id: string }[]).map(t => t.id)
    expect(await threads('label=work')).toEqual([first.thread_id])
    expect(await threads('label=work&label=unread')).toEqual([first.thread_id])
    expect(await threads('label=urgent&label=unread')).toEqual([lone.thread_id, first.thread_id])
    expect(await threads('label=work&label=sent')).toEqual([])
  })

  test('a cursor continues the list of its labels and is refused with others', async () => {
    const page = await h.request('GET', `/v1/emails?address=${inbox}&label=urgent&limit=1`, { key: org.key })
    expect(subjects(expectOk(page))).toEqual(['Lone'])
    const cursor = page.body.meta.cursor as string
    expect(subjects(await list(`address=${inbox}&label=urgent&cursor=${cursor}`))).toEqual(['Plan'])
    expectError(await h.request('GET', `/v1/emails?address=${inbox}&label=work&cursor=${cursor}`, { key: org.key }), 400, 'validation_error', /^cursor: /)
  })

  test('the long-poll with a label wakes for mail that carries it', async () => {
    const since = new Date().toISOString()
    const polling = h.request('GET', `/v1/emails?address=${inbox}&label=unread&since=${since}&wait=20`, { key: org.key })
    await Bun.sleep(50)
    await receive('Wake with a label', inbox)
    const res = await polling
    expect(subjects(expectOk(res))).toEqual(['Wake with a label'])
  }, 15_000)
})

describe('a connection key', () => {
  let key: string
  let mine: Listed
  let theirs: Listed

  beforeAll(async () => {
    const inv = expectOk(await post('/v1/agent-connections', { address }), 201)
    key = expectOk(await h.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    mine = await receive('For the agent', address)
    theirs = await receive('For the sibling', sibling)
  })

  test("changes the labels of its address's mail only", async () => {
    expect(expectOk(await post(`/v1/emails/${mine.id}/labels`, { add: ['read'] }, key)).labels).toEqual(['inbound', 'read'])
    expectError(await post(`/v1/emails/${theirs.id}/labels`, { add: ['read'] }, key), 404, 'not_found')
    expectError(await post('/v1/emails/labels', { ids: [mine.id, theirs.id], add: ['unread'] }, key), 404, 'not_found')
    expect((await get(`/v1/emails/${theirs.id}`)).labels).toEqual(['inbound', 'unread'])
    expect((await get(`/v1/emails/${mine.id}`)).labels).toEqual(['inbound', 'read'])
    // its list filtered by a label is its address's mail only
    expect(subjects(await list('label=unread', key))).not.toContain('For the sibling')
    expect((await get('/v1/labels', key)).length).toBeGreaterThanOrEqual(4)
  })

  test("may not manage labels or label a thread; sees only its address's label changes", async () => {
    expectError(await post('/v1/labels', { name: 'mine' }, key), 403, 'forbidden')
    expectError(await h.request('DELETE', '/v1/labels/work', { key }), 403, 'forbidden')
    expectError(await post(`/v1/threads/${mine.thread_id}/labels`, { add: ['read'] }, key), 403, 'forbidden')
    const start = await cursorNow(key)
    expectOk(await post(`/v1/emails/${theirs.id}/labels`, { add: ['read'] }))
    expectOk(await post(`/v1/emails/${mine.id}/labels`, { add: ['unread'] }, key))
    expect((await changesSince(start, key)).map(c => c.id)).toEqual([mine.id])
  })
})
