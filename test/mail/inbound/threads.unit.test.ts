/**
 * The inbound threads (src/mail/inbound/threads.ts): replies extracted off the calling
 * thread, in order; a message that outlasts the deadline is abandoned with null fields, and the
 * messages queued behind it are still extracted, on a new thread. Messages parsed and
 * authenticated there, their DNS asked of the caller's resolver; a thread that dies or hangs
 * replaced, its messages failed.
 */
import { describe, expect, test } from 'bun:test'
import { threadId } from 'node:worker_threads'
import { memoryResolver, type MemoryRecords, type Resolver } from '../../../src/dns/resolver'
import { authenticateMessage } from '../../../src/mail/inbound/authenticate'
import { InboundThreadFailed, InboundThreads } from '../../../src/mail/inbound/threads'
import { searchVector } from '../../../src/mail/search-text'
import { rfc822, senderDomain } from '../../helpers/mail'

const reply = { text: 'Yes, Tuesday works.\n\nOn Mon, Nov 23, 2026 at 10:15 AM Alice <alice@example.com> wrote:\n> Can you make Tuesday?\n', html: null }
/** HTML whose extraction takes many seconds (quadratic in its 40,000 line breaks; 10,000 took over a second) */
const crafted = { text: null, html: `<div>${'a<br>'.repeat(40_000)}</div>` }

describe('the extraction thread', () => {
  test('extracts a reply; the start of the thread does not count against its deadline', async () => {
    const thread = new InboundThreads(1, 50)
    expect(await thread.extract(reply)).toEqual({ text: 'Yes, Tuesday works.', html: null })
  })

  test('abandons a message past its deadline, and extracts those queued behind it on a new thread', async () => {
    const thread = new InboundThreads(1, 300)
    const started = performance.now()
    const [slow, next, after] = await Promise.all([thread.extract(crafted), thread.extract(reply), thread.extract(reply)])
    expect(slow).toEqual({ text: null, html: null })
    expect(next).toEqual({ text: 'Yes, Tuesday works.', html: null })
    expect(after).toEqual({ text: 'Yes, Tuesday works.', html: null })
    expect(performance.now() - started).toBeLessThan(5_000)
  }, 20_000)
})

describe('parse and authentication on the inbound threads', () => {
  const records: MemoryRecords = {}
  const domain = senderDomain(records, 'sender.example')
  const session = { ip: '127.0.0.1', helo: 'client.sender.example', mailFrom: 'sam@sender.example', mta: 'mx.test.local' }
  const message = async (subject: string) =>
    new TextEncoder().encode(
      await domain.sign(
        rfc822(
          { From: 'Sam <sam@sender.example>', To: 'agent@agents.localhost', Subject: subject, 'Message-ID': `<${crypto.randomUUID()}@sender.example>` },
          reply.text,
        ),
      ),
    )

  test("a message is parsed, authenticated and extracted on a thread, its DNS questions answered by the caller's resolver, its verdicts those of the main thread", async () => {
    const asked: string[] = []
    const memory = memoryResolver(records)
    const counting: Resolver = (name, rrtype) => {
      asked.push(`${rrtype} ${name}`)
      return memory(name, rrtype)
    }
    const threads = new InboundThreads(2)
    const raw = await message('Tuesday')
    const prepared = await threads.prepare(raw, session, counting)
    expect(prepared.mail).toMatchObject({ subject: 'Tuesday', from: { address: 'sam@sender.example', name: 'Sam' } })
    expect(prepared.mail.date).toBeNull()
    expect(prepared.extracted).toEqual({ text: 'Yes, Tuesday works.', html: null })
    // the search vector's words, cut on the thread: the vector the store would have cut
    const fields = {
      orgId: 'org_x',
      subject: 'Tuesday',
      fromName: 'Sam',
      fromAddress: 'sam@sender.example',
      text: prepared.mail.text,
      newText: 'Yes, Tuesday works.',
    }
    expect(prepared.searchLexemes).toBeString()
    expect(searchVector(fields, prepared.searchLexemes)).toBe(searchVector(fields))
    expect(prepared.auth).toMatchObject({
      spf: { result: 'pass' },
      dkim: [{ result: 'pass', domain: 'sender.example', aligned: true }],
      dmarc: { result: 'pass' },
    })
    // the same verdicts as authenticating on this thread, through the same kind of resolver
    expect(prepared.auth).toEqual(await authenticateMessage(raw, session, memoryResolver(records)))
    expect(asked).toContain('TXT sel._domainkey.sender.example')
    expect(asked).toContain('TXT _dmarc.sender.example')
    // done by a worker thread, not this one
    expect([...threads.prepared.keys()].every(id => id !== threadId)).toBe(true)
    expect([...threads.prepared.values()].reduce((a, b) => a + b, 0)).toBe(1)
    // many at once spread over the threads
    await Promise.all(Array.from({ length: 8 }, async (_, i) => threads.prepare(await message(`n${i}`), session, memory)))
    expect(threads.prepared.size).toBe(2)
    threads.stop()
  }, 20_000)

  test('a thread that dies mid-message is replaced: its messages fail, the next are prepared on a new thread', async () => {
    const memory = memoryResolver(records)
    const threads = new InboundThreads(1)
    let kill = true
    const killing: Resolver = (name, rrtype) => {
      if (kill) {
        kill = false
        for (const w of threads.workers) w.terminate()
        return new Promise(() => {})
      }
      return memory(name, rrtype)
    }
    const raw = await message('first')
    await expect(threads.prepare(raw, session, killing)).rejects.toBeInstanceOf(InboundThreadFailed)
    const again = await threads.prepare(raw, session, killing)
    expect(again.auth.dkim[0]?.result).toBe('pass')
    threads.stop()
  }, 20_000)

  test('a thread that stops answering is replaced, and its messages fail', async () => {
    const threads = new InboundThreads(1, 10_000, 1_500)
    const started = performance.now()
    // the extraction's deadline is far off; the thread cannot answer a ping while it works
    const stuck = threads.prepare(
      new TextEncoder().encode(rfc822({ From: 'a@b.example', 'Content-Type': 'text/html' }, crafted.html)),
      session,
      memoryResolver(records),
    )
    await expect(stuck).rejects.toBeInstanceOf(InboundThreadFailed)
    expect(performance.now() - started).toBeLessThan(8_000)
    expect((await threads.prepare(await message('after'), session, memoryResolver(records))).auth.spf.result).toBe('pass')
    threads.stop()
  }, 20_000)
})
