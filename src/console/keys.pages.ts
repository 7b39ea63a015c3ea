/**
 * API keys in the console: the list, a new key (its secret shown on this one page, never again)
 * and revocation, through the same service functions as /v1/api-keys (auth/api-keys.ts).
 */
import { createApiKey, listApiKeys, presentKey, revokeApiKey } from '../auth/api-keys'
import { credentialCache } from '../auth/credentials'
import { errors } from '../errors'
import { cursors } from '../http/pagination'
import { actionForm, html, pager, table, when } from './layout'
import { render, type Visit } from './visit'

const MAX_NAME = 100

export async function keysPage(v: Visit, created?: { name: string; key: string }, notice?: string) {
  const cursor = created || notice ? undefined : (v.url.searchParams.get('cursor') ?? undefined)
  const list = await cursors(v.ctx).read(
    `console-api-keys:${v.auth.orgId}`,
    { limit: 25, cursor },
    p => listApiKeys(v.ctx.sql, v.auth.orgId, p, null),
    presentKey,
  )
  return render(
    v,
    'API keys',
    html`${
      created
        ? html`<section aria-labelledby="new-key" role="status">
<h2 id="new-key">New key “${created.name}”</h2>
<p>Copy it now: this is the only time it is shown.</p>
<p class="secret" id="new-key-secret">${created.key}</p>
</section>`
        : ''
    }
${notice ? html`<p role="status">${notice}</p>` : ''}
<form method="post" action="/console/keys">
<input type="hidden" name="csrf_token" value="${v.viewer.csrf}">
<label for="key-name">Name of a new key</label>
<input id="key-name" name="name" type="text" required maxlength="${MAX_NAME}" placeholder="e.g. support agent">
<button type="submit">Create key</button>
</form>
${table(
  'API keys of this organization, newest first',
  ['Name', 'Starts with', 'Created', 'Revoked', ''],
  list.data,
  k => html`<tr><td>${k.name}</td><td><code>${k.hint}…</code></td><td>${when(k.created_at)}</td><td>${k.revoked_at ? when(k.revoked_at) : 'active'}</td>
<td>${k.revoked_at ? '' : actionForm(`/console/keys/${k.id}/revoke`, v.viewer.csrf, 'Revoke', { secondary: true, name: `Revoke ${k.name}` })}</td></tr>`,
  'No keys yet.',
)}
${pager('/console/keys', list.meta.total, list.meta.cursor ?? null)}`,
    { url: '/console/keys' },
  )
}

export async function createKey(v: Visit) {
  const name = (v.form.get('name') ?? '').trim()
  if (!name || name.length > MAX_NAME) throw errors.validation('name', `must be 1 to ${MAX_NAME} characters`)
  const key = await v.ctx.sql.begin(tx => createApiKey(tx, v.auth.orgId, v.auth.userId, name))
  return keysPage(v, { name: key.name, key: key.key })
}

export async function revokeKey(v: Visit, id: string) {
  const row = await revokeApiKey(v.ctx.sql, v.auth.orgId, id)
  credentialCache(v.ctx).evict({ keyId: row.id })
  return keysPage(v, undefined, `Revoked “${row.name}”.`)
}
