/**
 * The extraction thread (src/mail/inbound/extraction.ts): replies extracted off the calling
 * thread, in order; a message that outlasts the deadline is abandoned with null fields, and the
 * messages queued behind it are still extracted, on a new thread.
 */
import { describe, expect, test } from 'bun:test'
import { ExtractionThread } from '../../../src/mail/inbound/extraction'

const reply = { text: 'Yes, Tuesday works.\n\nOn Mon, Nov 23, 2026 at 10:15 AM Alice <alice@example.com> wrote:\n> Can you make Tuesday?\n', html: null }
/** HTML whose extraction takes many seconds (quadratic in its 40,000 line breaks; 10,000 took over a second) */
const crafted = { text: null, html: `<div>${'a<br>'.repeat(40_000)}</div>` }

describe('the extraction thread', () => {
  test('extracts a reply; the start of the thread does not count against its deadline', async () => {
    const thread = new ExtractionThread(50)
    expect(await thread.extract(reply)).toEqual({ text: 'Yes, Tuesday works.', html: null })
  })

  test('abandons a message past its deadline, and extracts those queued behind it on a new thread', async () => {
    const thread = new ExtractionThread(300)
    const started = performance.now()
    const [slow, next, after] = await Promise.all([thread.extract(crafted), thread.extract(reply), thread.extract(reply)])
    expect(slow).toEqual({ text: null, html: null })
    expect(next).toEqual({ text: 'Yes, Tuesday works.', html: null })
    expect(after).toEqual({ text: 'Yes, Tuesday works.', html: null })
    expect(performance.now() - started).toBeLessThan(5_000)
  }, 20_000)
})
