/**
 * The `registries.fetch` job: fetches a registry's document through the webhook SSRF guard
 * (public addresses only, or loopback where WEBHOOK_ALLOW_LOOPBACK allows it; the checked
 * address is the one connected to; no redirects; bounded size and time) and replaces the cached
 * cards with their fetch time. A failed fetch keeps the previous cards and records why; it is
 * not retried (POST /v1/registries/{id}/refresh asks again).
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { ApiError } from '../errors'
import type { JobKind } from '../jobs/kind'
import { log } from '../log'
import { getChecked } from '../egress/checked-fetch'
import { checkWebhookUrl } from '../egress/url-safety'
import { readRegistryDocument } from './cards'
import { recordFetchFailure, registryUrl, replaceCards } from './queries'

export const REGISTRY_FETCH_KIND = 'registries.fetch'
/** One pending fetch per registry, whoever asks for it. */
export const fetchDedupeKey = (registryId: string) => `${REGISTRY_FETCH_KIND}:${registryId}`
export const MAX_REGISTRY_BYTES = 512 * 1024
export const MAX_REGISTRY_AGENTS = 200
const FETCH_TIMEOUT_MS = 10_000

/** Where the document of a registry URL is: a bare origin means its agent card. */
export function documentUrl(raw: string): string {
  const url = new URL(raw)
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/.well-known/agent-card.json'
  return url.toString()
}

async function fetchCards(ctx: AppContext, url: string) {
  const target = await checkWebhookUrl(documentUrl(url), ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK)
  const res = await getChecked(target, {
    accept: 'application/json',
    userAgent: 'agent-mail-registries/1',
    timeoutMs: FETCH_TIMEOUT_MS,
    maxBytes: MAX_REGISTRY_BYTES,
  })
  if (res.status !== 200) throw new Error(`the registry answered HTTP ${res.status}`)
  if (res.tooLarge) throw new Error(`the registry document is larger than ${MAX_REGISTRY_BYTES} bytes`)
  let document: unknown
  try {
    document = JSON.parse(res.body)
  } catch {
    throw new Error('the registry document is not JSON')
  }
  const cards = readRegistryDocument(document, MAX_REGISTRY_AGENTS)
  if (!cards.length) throw new Error('the registry document holds no agent card (an object with a name)')
  return cards
}

export const registryFetchJob: JobKind<{ registry_id: string }> = {
  kind: REGISTRY_FETCH_KIND,
  async handle(ctx, payload) {
    const registry = await registryUrl(ctx.sql, payload.registry_id)
    if (!registry) return
    let cards: Awaited<ReturnType<typeof fetchCards>>
    try {
      cards = await fetchCards(ctx, registry.url)
    } catch (error) {
      const reason =
        error instanceof ApiError
          ? error.message
          : (error as Error).name === 'TimeoutError'
            ? `no answer within ${FETCH_TIMEOUT_MS} ms`
            : (error as Error).message
      await recordFetchFailure(ctx.sql, registry.id, reason.slice(0, 500))
      log.info('registry fetch failed', { registry_id: registry.id, reason })
      return
    }
    await ctx.sql.begin(tx => replaceCards(tx, registry.id, cards, new Date(), randomUUIDv7))
  },
}
