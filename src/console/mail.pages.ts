/**
 * Mail in the console: inboxes, their mail, threads, one thread with each message (its text, its
 * HTML in a sandboxed frame, its attachments and authentication verdicts), and search.
 */
import { signDownloadToken } from '../emails/download-token'
import { call, page, type Row } from './call'
import { html, pager, table, when } from './layout'
import { listPage } from './list-page'
import { render, type Visit } from './visit'

/** Attachment links stay valid this long: the page is read now, not bookmarked. */
const ATTACHMENT_LINK_SECONDS = 15 * 60

const q = (v: Visit, name: string) => v.url.searchParams.get(name) ?? undefined
const from = (e: Row) => (e.from ? (e.from.name ? `${e.from.name} <${e.from.address}>` : e.from.address) : '')
const addresses = (list: Row[]) => list.map(a => a.address).join(', ')

const mailTable = (caption: string, items: Row[], empty: string) =>
  table(
    caption,
    ['Received', 'From', 'To', 'Subject'],
    items,
    e => html`<tr><td>${when(e.received_at)}</td><td>${from(e)}</td><td>${addresses(e.to)}</td>
<td><a href="/console/threads/${e.thread_id}#email-${e.id}">${e.subject || '(no subject)'}</a></td></tr>`,
    empty,
  )

export const inboxesPage = (v: Visit) =>
  listPage(v, 'Inboxes', 'list_inboxes', '/console/inboxes', {
    caption: 'Inboxes of this organization',
    heads: ['Address', 'Name', 'Created'],
    row: i => html`<tr><td><a href="/console/inboxes/${i.id}">${i.address}</a></td><td>${i.display_name ?? ''}</td><td>${when(i.created_at)}</td></tr>`,
    empty: 'No inboxes yet. Create one with the API, the CLI (agent-mail inbox create) or an agent.',
  })

export async function inboxPage(v: Visit, id: string) {
  const inbox = await call(v.ctx, v.auth, 'get_inbox', { id })
  const mail = await page(v.ctx, v.auth, 'list_emails', { inbox_id: id, cursor: q(v, 'cursor') })
  return render(
    v,
    inbox.address,
    html`${mailTable(`Mail of ${inbox.address}, newest first`, mail.items, 'No mail yet.')}
${pager(`/console/inboxes/${id}`, mail.total, mail.cursor)}`,
  )
}

export const threadsPage = (v: Visit) =>
  listPage(v, 'Threads', 'list_threads', '/console/threads', {
    caption: 'Threads, latest message first',
    heads: ['Last message', 'Subject', 'Participants', 'Messages'],
    row: t => html`<tr><td>${when(t.last_message_at)}</td><td><a href="/console/threads/${t.id}">${t.subject || '(no subject)'}</a></td>
<td>${t.participants.join(', ')}</td><td>${t.message_count}</td></tr>`,
    empty: 'No threads yet.',
  })

function verdicts(auth: Row) {
  const cell = (name: string, verdict: Row | undefined) => {
    const result = String(verdict?.result ?? 'none')
    return html`<li>${name}: <span class="${result === 'pass' ? 'verdict-pass' : result === 'fail' ? 'verdict-fail' : ''}">${result}</span></li>`
  }
  return html`<ul aria-label="Authentication verdicts">${cell('SPF', auth.spf)}${
    auth.dkim.length
      ? auth.dkim.map((d: Row, i: number) => cell(`DKIM ${i + 1}${d.signing_domain ? ` (${d.signing_domain})` : ''}`, d))
      : cell('DKIM', undefined)
  }${cell('DMARC', auth.dmarc)}${cell('ARC', auth.arc)}</ul>`
}

function message(v: Visit, e: Row) {
  const token = signDownloadToken(v.ctx.keys, e.id, v.auth.orgId, Date.now(), ATTACHMENT_LINK_SECONDS)
  return html`<article id="email-${e.id}" aria-labelledby="subject-${e.id}">
<header>
<h2 id="subject-${e.id}">${e.subject || '(no subject)'}</h2>
<p class="muted">From ${from(e)} to ${addresses(e.to)}${e.cc.length ? ` (cc ${addresses(e.cc)})` : ''}, ${when(e.received_at)} · ${e.direction}</p>
</header>
${
  e.content_discarded
    ? html`<p class="muted">The content of this message was discarded.</p>`
    : html`${
        e.html !== null
          ? html`<section aria-label="HTML">
<h3>HTML</h3>
<p class="muted">Shown without scripts; remote images and other remote content are blocked. <a href="/console/emails/${e.id}/html?remote=1" target="message-${e.id}" hx-boost="false">Load remote content</a></p>
<iframe class="message-html" name="message-${e.id}" title="The HTML of ${e.subject || 'this message'}" sandbox src="/console/emails/${e.id}/html" referrerpolicy="no-referrer"></iframe>
</section>`
          : ''
      }
${e.text !== null ? html`<section aria-label="Text"><h3>Text</h3><pre class="message-text">${e.text}</pre></section>` : ''}`
}
<details>
<summary>Attachments (${e.attachments.length}) and authentication</summary>
${
  e.attachments.length
    ? html`<ul aria-label="Attachments">${e.attachments.map(
        (a: Row) =>
          html`<li><a href="/v1/emails/${e.id}/attachments/${a.index}?token=${encodeURIComponent(token)}" download hx-boost="false">${a.filename ?? `attachment-${a.index}`}</a> <span class="muted">${a.content_type}, ${a.size_bytes} bytes</span></li>`,
      )}</ul>`
    : html`<p>No attachments.</p>`
}
${verdicts(e.authentication)}
</details>
</article>`
}

export async function threadPage(v: Visit, id: string) {
  const thread = await call(v.ctx, v.auth, 'get_thread', { id })
  const emails = await Promise.all(thread.emails.map((s: Row) => call(v.ctx, v.auth, 'get_email', { id: s.id })))
  return render(
    v,
    thread.subject || '(no subject)',
    html`<p class="muted">${thread.message_count} ${thread.message_count === 1 ? 'message' : 'messages'} between ${thread.participants.join(', ')}.</p>
${emails.map(e => message(v, e))}`,
  )
}

/**
 * The HTML of a message, for the sandboxed frame of its thread page: its own policy allows no
 * script, no form, no frame, and no remote image, font or style unless the person asked for
 * remote content (`?remote=1`); the frame's `sandbox` keeps it in an origin of its own too.
 */
export async function messageHtml(v: Visit, id: string) {
  const email = await call(v.ctx, v.auth, 'get_email', { id })
  const remote = v.url.searchParams.get('remote') === '1' ? ' https: http:' : ''
  const policy = [
    "default-src 'none'",
    `img-src data:${remote}`,
    `style-src 'unsafe-inline'${remote}`,
    `font-src data:${remote}`,
    "form-action 'none'",
    "frame-ancestors 'self'",
    "base-uri 'none'",
    'sandbox',
  ].join('; ')
  return new Response(email.html ?? '', {
    headers: {
      'content-type': 'text/html;charset=utf-8',
      'content-security-policy': policy,
      'x-frame-options': 'SAMEORIGIN',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'private, no-store',
    },
  })
}

export async function searchPage(v: Visit) {
  const query = q(v, 'q')
  const results = query ? await page(v.ctx, v.auth, 'search_emails', { q: query, cursor: q(v, 'cursor') }) : null
  return render(
    v,
    'Search',
    html`<form method="get" action="/console/search" role="search">
<label for="q">Search mail (subject, text, addresses)</label>
<input id="q" type="search" name="q" value="${query ?? ''}" required maxlength="200">
<button type="submit">Search</button>
</form>
${results ? html`${mailTable(`Results for “${query}”`, results.items, 'Nothing matches.')}${pager('/console/search', results.total, results.cursor, { q: query })}` : ''}`,
  )
}
