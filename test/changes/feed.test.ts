/** GET /v1/changes: order, cursors, retention, filters, boundaries, and changes written with their cause. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress, rfc822 } from '../helpers/mail'
import { memoryResolver } from '../../src/dns/resolver'
import { ingest } from '../../src/mail/inbound/ingest'
import { pruneChanges } from '../../src/changes/feed'
import { recordChanges } from '../../src/changes/record'

let t: TestApp
let org: TestOrg

const put = async (o: TestOrg, key: string, value: unknown) =>
  expectOk(await t.request('PUT', `/v1/memories/${encodeURIComponent(key)}`, { key: o.key, body: { value } }))
const feed = async (o: TestOrg | string, query = '') => {
  const res = await t.request('GET', `/v1/changes${query ? `?${query}` : ''}`, { key: typeof o === 'string' ? o : o.key })
  return {
    changes: expectOk(res) as {
      id: string
      seq: number
      type: string
      resource: { type: string; id: string }
      data: Record<string, unknown>
      occurred_at: string
    }[],
    meta: res.body.meta,
  }
}

async function receive(rcptTo: string[], subject: string) {
  const raw = new TextEncoder().encode(
    rfc822({ From: 'Sam <sam@sender.example>', To: rcptTo.join(', '), Subject: subject, 'Message-ID': `<${crypto.randomUUID()}@sender.example>` }, 'hello'),
  )
  return ingest(t.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo, remoteIp: '192.0.2.1', helo: 'sender.example', tls: false })
}

beforeAll(async () => {
  t = await testApp({}, { resolver: memoryResolver({}) })
  org = await createOrg()
})

describe('order and cursors', () => {
  test('without a cursor the feed starts now; meta.cursor resumes with nothing missed or repeated', async () => {
    const o = await createOrg()
    await put(o, 'before', 1)
    const start = await feed(o)
    expect(start.changes).toEqual([])
    expect(typeof start.meta.cursor).toBe('string')
    await put(o, 'a', 1)
    await put(o, 'b', 2)
    await put(o, 'c', 3)
    const first = await feed(o, `cursor=${start.meta.cursor}&limit=2`)
    expect(first.changes.map(c => c.resource.id)).toEqual(['a', 'b'])
    expect(first.meta).toMatchObject({ total: 3, limit: 2 })
    const second = await feed(o, `cursor=${first.meta.cursor}&limit=2`)
    expect(second.changes.map(c => c.resource.id)).toEqual(['c'])
    // an empty page still says where to resume
    const empty = await feed(o, `cursor=${second.meta.cursor}`)
    expect(empty.changes).toEqual([])
    expect(empty.meta.cursor).toBe(second.meta.cursor)
    const all = [...first.changes, ...second.changes]
    expect(all.map(c => c.seq)).toEqual([2, 3, 4])
    expect(all[0]).toMatchObject({ type: 'memory.set', resource: { type: 'memory', id: 'a' }, data: { key: 'a', scope: 'org' } })
    expect(all[0]!.id).toMatch(/^evt_[0-9a-f]{32}$/)
    expect(all[0]!.occurred_at).toMatch(/Z$/)
  })

  test('cursor=earliest replays the retained window; GET /v1/changes/cursor is now', async () => {
    const o = await createOrg()
    await put(o, 'x', 1)
    await put(o, 'y', 1)
    expect((await feed(o, 'cursor=earliest')).changes.map(c => c.seq)).toEqual([1, 2])
    const now = expectOk(await t.request('GET', '/v1/changes/cursor', { key: o.key }))
    expect(now.seq).toBe(2)
    await put(o, 'z', 1)
    expect((await feed(o, `cursor=${now.cursor}`)).changes.map(c => c.resource.id)).toEqual(['z'])
  })

  test('a cursor older than retention is 410 naming the earliest cursor', async () => {
    const o = await createOrg()
    await put(o, 'old', 1)
    const sql = await testSql()
    const start = await feed(o, 'cursor=earliest&limit=1')
    await put(o, 'old2', 1)
    await sql`update changes set occurred_at = now() - interval '8 days' where org_id = ${o.orgId}`
    await put(o, 'new', 1)
    await pruneChanges(sql)
    const res = await t.request('GET', `/v1/changes?cursor=${start.meta.cursor}`, { key: o.key })
    expectError(res, 410, 'cursor_expired', /earliest cursor/)
    const earliest = res.body.error.details.earliest_cursor
    expect(res.body.error.message).toContain(earliest)
    expect((await feed(o, `cursor=${earliest}`)).changes.map(c => c.resource.id)).toEqual(['new'])
    expect((await feed(o, 'cursor=earliest')).changes.map(c => c.resource.id)).toEqual(['new'])
  })

  test('bad cursors, types and waits are validation errors', async () => {
    expectError(await t.request('GET', '/v1/changes?cursor=nonsense', { key: org.key }), 400, 'validation_error', /^cursor: /)
    expectError(await t.request('GET', '/v1/changes?types=Email%20received', { key: org.key }), 400, 'validation_error', /^types: /)
    expectError(await t.request('GET', '/v1/changes?wait=31', { key: org.key }), 400, 'validation_error', /wait/)
    expectError(await t.request('GET', '/v1/changes?limit=0', { key: org.key }), 400, 'validation_error', /limit/)
    expectError(await t.request('GET', '/v1/changes', {}), 401, 'unauthorized')
  })
})

describe('filters', () => {
  test('types and address filters skip changes without creating gaps', async () => {
    const o = await createOrg()
    const a = await managedAddress(t.ctx, o.orgId)
    const b = await managedAddress(t.ctx, o.orgId)
    const start = (await feed(o)).meta.cursor
    await receive([a], 'to a')
    await put(o, 'm', 1)
    await receive([b], 'to b')
    const mail = await feed(o, `cursor=${start}&types=email.*`)
    expect(mail.changes.map(c => c.data.subject)).toEqual(['to a', 'to b'])
    const onlyA = await feed(o, `cursor=${start}&address=${encodeURIComponent(a.toUpperCase())}`)
    expect(onlyA.changes.map(c => c.data.subject)).toEqual(['to a'])
    // the cursor of a filtered page moved past what the filter skipped
    await put(o, 'n', 1)
    const next = await feed(o, `cursor=${onlyA.meta.cursor}`)
    expect(next.changes.map(c => c.resource.id)).toEqual(['n'])
    const memoryOnly = await feed(o, `cursor=${start}&types=memory.set,memory.deleted`)
    expect(memoryOnly.changes.map(c => c.resource.id)).toEqual(['m', 'n'])
  })
})

describe('mail changes', () => {
  test('a received message is one change per organization, with the id of its webhook event', async () => {
    const o = await createOrg()
    const address = await managedAddress(t.ctx, o.orgId)
    const sql = await testSql()
    // an endpoint on this org, so the message gets a delivery with an event id
    const endpointId = crypto.randomUUID()
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${endpointId}, ${o.orgId}, 'http', 'https://hooks.example.com/in', true, '{}')`
    const start = (await feed(o)).meta.cursor
    const { stored } = await receive([address], 'hello feed')
    const [change] = (await feed(o, `cursor=${start}`)).changes
    const [delivery] = await sql<
      { event_id: string; payload: { id: string } }[]
    >`select event_id, payload from webhook_deliveries where email_id = ${stored[0]!.id}`
    expect(change).toMatchObject({ type: 'email.received', resource: { type: 'email', id: stored[0]!.id }, data: { subject: 'hello feed', to: [address] } })
    expect(change!.id).toBe(delivery!.event_id)
    expect(delivery!.payload.id).toBe(change!.id)
  })

  test('a change is written in the same transaction as its cause: a rolled-back write leaves neither', async () => {
    const o = await createOrg()
    const sql = await testSql()
    const start = (await feed(o)).meta.cursor
    await expect(
      sql.begin(async tx => {
        await recordChanges(tx, [{ orgId: o.orgId, type: 'memory.set', resource: { type: 'memory', id: 'ghost' }, data: {} }])
        throw new Error('crash before commit')
      }),
    ).rejects.toThrow('crash before commit')
    expect((await feed(o, `cursor=${start}`)).changes).toEqual([])
    await put(o, 'real', 1)
    // the rolled-back change did not take a number: no hole either
    expect((await feed(o, `cursor=${start}`)).changes.map(c => c.seq)).toEqual([1])
  })
})

describe('concurrency', () => {
  test('gaps are impossible: the feed read while 20 writers commit, slower ones holding their transaction open', async () => {
    const o = await createOrg()
    const sql = await testSql()
    const WRITERS = 20
    const PER_WRITER = 5
    let cursor = (await feed(o)).meta.cursor as string
    const seen: number[] = []
    let writing = true
    const reader = (async () => {
      while (writing || seen.length < WRITERS * PER_WRITER) {
        const page = await feed(o, `cursor=${cursor}`)
        for (const c of page.changes) seen.push(c.seq)
        cursor = page.meta.cursor
        if (!page.changes.length && !writing) break
      }
    })()
    await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        (async () => {
          for (let i = 0; i < PER_WRITER; i++) {
            await sql.begin(async tx => {
              await recordChanges(tx, [{ orgId: o.orgId, type: 'test.write', resource: { type: 'test', id: `${w}-${i}` }, data: {} }])
              // a slow transaction: its number is taken, its commit comes later
              await tx`select pg_sleep(${(w % 4) * 0.003})`
            })
          }
        })(),
      ),
    )
    writing = false
    await reader
    const rest = await feed(o, `cursor=${cursor}`)
    for (const c of rest.changes) seen.push(c.seq)
    expect(seen).toEqual(Array.from({ length: WRITERS * PER_WRITER }, (_, i) => i + 1))
  })
})

describe('boundaries', () => {
  test("another organization sees none of these changes and cannot use this feed's cursor", async () => {
    const a = await createOrg()
    const b = await createOrg()
    await put(a, 'secret', 1)
    const cursor = (await feed(a, 'cursor=earliest')).meta.cursor
    expect((await feed(b, 'cursor=earliest')).changes).toEqual([])
    expectError(await t.request('GET', `/v1/changes?cursor=${cursor}`, { key: b.key }), 400, 'validation_error', /^cursor: /)
  })

  test('a connection key sees only the changes of its bound address', async () => {
    const o = await createOrg()
    const bound = await managedAddress(t.ctx, o.orgId)
    const other = await managedAddress(t.ctx, o.orgId)
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: o.key, body: { address: bound } }), 201)
    const conn = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    const start = (await feed(conn)).meta.cursor
    await receive([bound], 'for the agent')
    await put(o, 'org-only', 1)
    await receive([other], 'for someone else')
    await receive([other, bound], 'for both')
    expect((await feed(conn, `cursor=${start}`)).changes.map(c => c.data.subject)).toEqual(['for the agent', 'for both'])
    expect((await feed(conn, 'cursor=earliest')).changes.map(c => c.data.subject)).toEqual(['for the agent', 'for both'])
    expectError(await t.request('GET', `/v1/changes?address=${encodeURIComponent(other)}`, { key: conn }), 403, 'forbidden')
    expect(expectOk(await t.request('GET', '/v1/changes/cursor', { key: conn })).seq).toBeGreaterThan(0)
  })
})
