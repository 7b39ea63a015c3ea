/**
 * The reply without its quotes (src/mail/inbound/extract.ts) on real shapes of replies
 * (test/fixtures/replies/*.eml, parsed as ingest parses them): what each keeps and drops, as
 * docs/extracted-text.md lists it.
 */
import { describe, expect, test } from 'bun:test'
import { extractReply } from '../../../src/mail/inbound/extract'
import { parseMail } from '../../../src/mail/inbound/parse'
import { EXPECTED_TEXT, QUOTED, REPLY_FIXTURES } from '../../helpers/replies'

async function fixture(name: string) {
  return parseMail(new Uint8Array(await Bun.file(`${REPLY_FIXTURES}/${name}.eml`).arrayBuffer()))
}

describe('extracted_text of each fixture', () => {
  for (const [name, expected] of Object.entries(EXPECTED_TEXT)) {
    test(name, async () => {
      const mail = await fixture(name)
      const { text } = await extractReply(mail)
      expect(text).toBe(expected)
      for (const quoted of QUOTED[name]!) expect(text).not.toContain(quoted)
      // the full bodies are untouched: the quote is still in them
      for (const quoted of QUOTED[name]!) expect(`${mail.text ?? ''}${mail.html ?? ''}`.replace(/&lt;|&gt;/g, '')).toContain(quoted.split(' ')[0]!)
    })
  }
})

describe('extracted_html', () => {
  test('keeps the new content of each HTML reply and drops the quote, its header line and the signature', async () => {
    const cases: [string, string[], string[]][] = [
      ['gmail', ['Ship the report on Friday', 'Thanks,'], ['gmail_quote', 'Could you check', 'Head of Finance']],
      ['outlook-desktop', ['same rate', 'Kind regards,'], ['Our contract ends', 'Sent:']],
      ['outlook-web', ['Italian place'], ['divRplyFwdMsg', '<hr', 'are you free for lunch']],
      ['apple-mail', ['two slides on hiring'], ['blockquote', 'Anything to add']],
      ['thunderbird', ['start the migration'], ['moz-cite-prefix', 'Can we move', 'Posteo Test GmbH']],
      ['html-only', ['lighthouse'], ['yahoo_quoted', 'Here are the photos']],
    ]
    for (const [name, kept, dropped] of cases) {
      const { html } = await extractReply(await fixture(name))
      for (const k of kept) expect(html, `${name} keeps ${k}`).toContain(k)
      for (const d of dropped) expect(html, `${name} drops ${d}`).not.toContain(d)
    }
  })

  test('is null for a message without HTML', async () => {
    for (const name of ['reply-above', 'inline-reply', 'forwarded', 'french', 'german', 'spanish', 'all-quote']) {
      expect((await extractReply(await fixture(name))).html).toBeNull()
    }
  })
})

describe('mail that is no reply, and HTML that is all quote', () => {
  test('a message without quote or signature keeps its bodies whole, HTML included', async () => {
    const html = '<div class="testimonial-quote">Best product ever</div><p>Our news</p>'
    expect(await extractReply({ text: 'Best product ever\n\nOur news', html })).toEqual({ text: 'Best product ever\n\nOur news', html })
  })

  test('an HTML-only reply that is all quote has nothing new: both fields are empty', async () => {
    const html =
      '<div class="gmail_quote"><div class="gmail_attr">On Mon, Nov 23, 2026 at 6:45 PM Alice &lt;alice@example.com&gt; wrote:</div>' +
      '<blockquote class="gmail_quote">Bob, did you renew the parking permit?</blockquote></div>'
    expect(await extractReply({ text: null, html })).toEqual({ text: '', html: '' })
  })
})

describe('bodies it does not read', () => {
  test('a message with no body has nothing extracted', async () => {
    expect(await extractReply({ text: null, html: null })).toEqual({ text: null, html: null })
  })

  test('a body over 512 KiB is not read; the fields stay null', async () => {
    const huge = `${'new words '.repeat(60_000)}\n\nOn Mon, Nov 23, 2026 at 10:15 AM Alice <alice@example.com> wrote:\n> old`
    expect(await extractReply({ text: huge, html: null })).toEqual({ text: null, html: null })
  })
})
