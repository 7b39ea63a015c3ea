/**
 * The periodic `registries.refresh` job: cached cards go stale, so every quarter of an hour the
 * registries last fetched (or last tried) more than REFRESH_AFTER_HOURS ago get a fetch job,
 * deduplicated per registry with the ones a request asks for.
 */
import type { JobKind } from '../jobs/kind'
import { enqueue } from '../jobs/queue'
import { fetchDedupeKey, REGISTRY_FETCH_KIND } from './fetch.job'
import { staleRegistries } from './queries'

export const REFRESH_AFTER_HOURS = 6
const BATCH = 500

export const registryRefreshJob: JobKind<Record<string, never>> = {
  kind: 'registries.refresh',
  everyMs: 15 * 60_000,
  async handle(ctx) {
    for (const id of await staleRegistries(ctx.sql, REFRESH_AFTER_HOURS, BATCH))
      await enqueue(ctx.sql, REGISTRY_FETCH_KIND, { registry_id: id }, { dedupeKey: fetchDedupeKey(id) })
  },
}
