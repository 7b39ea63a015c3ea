/** Threading of stored mail: by reference first, then by subject. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { inboundHarness, managedAddress, rfc822, type InboundHarness } from '../helpers/mail'
import { testDatabase } from '../helpers/database'

let h: InboundHarness, alice: TestOrg, aliceAddress: string
// The embedded fallback serves one connection: a second one, to watch statements, needs a server.
const onServer = (await testDatabase()).kind === 'postgres'

beforeAll(async () => {
  h = await inboundHarness()
  alice = await createOrg({ plan: 'developer' })
  aliceAddress = await managedAddress(h.ctx, alice.orgId)
})
afterAll(() => h.stop())

describe('threads', () => {
  test('a reply joins the thread of the message it references', async () => {
    const first = await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Plan', text: '1' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Unrelated', text: '2' })
    await h.transport.sendMail({
      from: 'sam@sender.example',
      to: aliceAddress,
      subject: 'Re: Plan',
      text: '3',
      inReplyTo: first.messageId,
      references: [first.messageId],
    })
    const reply = await h.latest(alice)
    const thread = await h.request('GET', `/v1/threads/${reply.thread_id}`, { key: alice.key })
    expect(thread.status).toBe(200)
    expect(thread.body.data.emails.map((e: { subject: string }) => e.subject)).toEqual(['Plan', 'Re: Plan'])
    expect(thread.body.data.message_count).toBe(2)
    const threads = await h.request('GET', '/v1/threads?limit=100', { key: alice.key })
    expect(threads.body.data.some((t: { id: string }) => t.id === reply.thread_id)).toBe(true)
  })

  test('without references, a Re: from a participant joins by subject; from a stranger it does not', async () => {
    await h.transport.sendMail({ from: 'kim@sender.example', to: aliceAddress, subject: 'Budget 2027', text: '1' })
    const original = await h.latest(alice)
    await h.transport.sendMail({ from: 'kim@sender.example', to: aliceAddress, subject: 'RE: Budget 2027', text: '2' })
    expect((await h.latest(alice)).thread_id).toBe(original.thread_id)
    await h.transport.sendMail({ from: 'stranger@elsewhere.example', to: aliceAddress, subject: 'Re: Budget 2027', text: '3' })
    expect((await h.latest(alice)).thread_id).not.toBe(original.thread_id)
  })
})

describe('threads by reference before subject', () => {
  test.skipIf(!onServer)('a message without references is stored by a statement that looks up no earlier mail', async () => {
    // Whether a lookup by Message-ID reads the organization's whole mail depends on the plan
    // PostgreSQL keeps for the prepared statement, which depends on statistics a test cannot
    // pin down; a statement without the lookup cannot read it under any plan.
    const { storeEmail } = await import('../../src/mail/store')
    const { parseMail } = await import('../../src/mail/inbound/parse')
    const { NO_VERDICTS } = await import('../../src/mail/inbound/authenticate')
    const postgres = (await import('postgres')).default
    const statements: string[] = []
    const sql = postgres((await testDatabase()).url, { max: 1, onnotice: () => {}, debug: (_connection, query) => statements.push(query) })
    try {
      const org = await createOrg()
      const store = async (headers: Record<string, string>) => {
        const raw = new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: 'x@y.example', Subject: 'lookups', ...headers }, 'x\n'))
        const mail = await parseMail(raw)
        statements.length = 0
        await sql.begin(tx =>
          storeEmail(h.ctx, tx, {
            orgId: org.orgId,
            direction: 'inbound',
            eventType: 'email.received',
            mail,
            raw,
            mailFrom: 'sam@sender.example',
            rcptTo: ['x@y.example'],
            auth: NO_VERDICTS,
          }),
        )
        return statements.find(q => q.includes('insert into emails'))!
      }
      const lookup = /from emails where/
      expect(await store({})).not.toMatch(lookup)
      expect(await store({ 'In-Reply-To': '<earlier@sender.example>' })).toMatch(lookup)
    } finally {
      await sql.end()
    }
  })

  test('a reply that references one thread and shares the subject of a newer one joins the referenced thread', async () => {
    const dana = await createOrg()
    const address = await managedAddress(h.ctx, dana.orgId)
    const first = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Topic', text: '1' })
    const firstThread = (await h.latest(dana)).thread_id
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Re: Other', text: '2' })
    const other = (await h.latest(dana)).thread_id
    expect(other).not.toBe(firstThread)
    await h.transport.sendMail({
      from: 'sam@sender.example',
      to: address,
      subject: 'Re: Other',
      text: '3',
      inReplyTo: first.messageId,
      references: [first.messageId],
    })
    expect((await h.latest(dana)).thread_id).toBe(firstThread)
    const thread = (await h.request('GET', `/v1/threads/${firstThread}`, { key: dana.key })).body.data
    expect(thread.message_count).toBe(2)
    expect(thread.emails.map((e: { subject: string }) => e.subject)).toEqual(['Topic', 'Re: Other'])
    expect(thread.participants).toContain('sam@sender.example')
  })

  test('a reference to messages of two threads: the thread of the newest referenced message', async () => {
    const eli = await createOrg()
    const address = await managedAddress(h.ctx, eli.orgId)
    const a = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Older thread', text: 'a' })
    const older = (await h.latest(eli)).thread_id
    const b = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Newer thread', text: 'b' })
    const newer = (await h.latest(eli)).thread_id
    // c joins the older thread, and is now the newest message of all
    const c = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Re: Older thread', text: 'c', references: [a.messageId] })
    expect((await h.latest(eli)).thread_id).toBe(older)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Both', text: 'd', references: [b.messageId, c.messageId] })
    expect((await h.latest(eli)).thread_id).toBe(older)
    expect(newer).not.toBe(older)
  })
})
