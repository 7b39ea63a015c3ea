/**
 * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, the way MCP
 * clients identify themselves without registering): a `client_id` that is an https URL names a
 * JSON document at that URL describing the client. At each authorization request we fetch it
 * through the webhook SSRF guard (public addresses only, the checked address is the one
 * connected to, no redirects, a bounded body and time), check it like a registration, and keep
 * what it says in `oauth_clients` under that id, so the token endpoint knows the client.
 */
import type { AppContext } from '../context'
import { ApiError } from '../errors'
import { getChecked } from '../egress/checked-fetch'
import { checkWebhookUrl } from '../egress/url-safety'
import { checkRegistration } from './clients'
import { upsertMetadataDocumentClient, type ClientRow } from './queries'

const MAX_DOCUMENT_BYTES = 5 * 1024
const FETCH_TIMEOUT_MS = 5_000
export const MAX_CLIENT_ID_URL_LENGTH = 2000

/** Whether a client_id is a metadata document URL rather than an id we issued. */
export function isMetadataDocumentId(clientId: string): boolean {
  return clientId.startsWith('https://') || clientId.startsWith('http://')
}

/** Why the URL cannot be a client id, or null. Plain http only where loopback webhooks are allowed (development, tests). */
function urlProblem(clientId: string, allowLoopback: boolean): string | null {
  if (clientId.length > MAX_CLIENT_ID_URL_LENGTH) return `must be at most ${MAX_CLIENT_ID_URL_LENGTH} characters`
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return 'is not a URL'
  }
  if (url.protocol !== 'https:' && !(allowLoopback && url.protocol === 'http:')) return 'a client ID metadata document URL must use https'
  if (url.hash || url.username || url.password) return 'must have no fragment and no user information'
  if (url.pathname === '/' || url.pathname === '') return 'must have a path (the document, not the site)'
  if (url.pathname.split('/').some(s => s === '.' || s === '..')) return 'must not contain dot segments'
  return null
}

/**
 * Fetches and checks the document a client_id names and stores it as the client; returns the
 * client, or why it cannot be used (shown on the authorization error page, never redirected).
 */
export async function loadMetadataClient(ctx: AppContext, clientId: string): Promise<ClientRow | { error: string }> {
  const problem = urlProblem(clientId, ctx.config.WEBHOOK_ALLOW_LOOPBACK)
  if (problem) return { error: `client_id: ${problem}` }
  let document: Record<string, unknown>
  try {
    const target = await checkWebhookUrl(clientId, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK, 'client_id')
    const res = await getChecked(target, {
      accept: 'application/json',
      userAgent: 'agent-mail-oauth/1',
      timeoutMs: FETCH_TIMEOUT_MS,
      maxBytes: MAX_DOCUMENT_BYTES,
    })
    if (res.status !== 200) return { error: `client_id: the metadata document answered HTTP ${res.status}` }
    if (res.tooLarge) return { error: `client_id: the metadata document is larger than ${MAX_DOCUMENT_BYTES} bytes` }
    const text = res.body
    const parsed: unknown = JSON.parse(text)
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { error: 'client_id: the metadata document is not a JSON object' }
    document = parsed as Record<string, unknown>
  } catch (error) {
    if (error instanceof ApiError) return { error: error.message }
    if (error instanceof SyntaxError) return { error: 'client_id: the metadata document is not JSON' }
    return { error: `client_id: the metadata document could not be fetched (${(error as Error).name === 'TimeoutError' ? 'timed out' : 'connection failed'})` }
  }
  // the document must claim the very URL it was fetched from, or anyone could serve another client's name
  if (document.client_id !== clientId) return { error: 'client_id: the metadata document names another client_id' }
  if ('client_secret' in document || 'client_secret_expires_at' in document) return { error: 'client_id: a metadata document must not carry a client secret' }
  const checked = checkRegistration(document)
  if ('error' in checked) return { error: `client_id: ${checked.description}` }
  const row = await upsertMetadataDocumentClient(ctx.sql, { id: clientId, name: checked.name, redirectUris: checked.redirectUris })
  if (!row) return { error: 'client_id: not usable as a metadata document URL' }
  return row
}
