/** GET /v1/changes: the replayable long-poll of everything that happened in an organization. */
import { mailEvents } from '../events'
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { onReadReplica } from '../http/read-routing'
import { Page, Paged } from '../http/envelope'
import { errors } from '../errors'
import { CHANGES_RETENTION_DAYS, decodeCursor, EARLIEST, encodeCursor, feedBounds, parseTypes, presentChange, readFeed, type FeedPage } from './feed'
import { Change, MAX_CHANGES_WAIT_SECONDS, UNSIGNALLED_REREAD_MS } from './model'

const Cursor = t.Object({ cursor: t.String({ description: 'where to resume; pass it as `cursor` (also in meta.cursor of every page)' }), seq: t.Integer() })

export function changesRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/changes', tags: ['Changes'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query, request }) => {
        const read = async (ctx: AppContext) => {
          const types = parseTypes(query.types)
          const address = query.address?.trim().toLowerCase() ?? null
          if (auth.boundAddress && address !== null && address !== auth.boundAddress)
            throw errors.forbidden(`connection key: acts only for ${auth.boundAddress}`)
          const filter = { ...types, address: auth.boundAddress ?? address }
          const limit = query.limit ?? 100
          // Without a cursor the feed starts now: at the committed head.
          let after = query.cursor === undefined ? (await feedBounds(ctx.sql, auth.orgId)).head : decodeCursor(ctx, auth.orgId, query.cursor)
          const deadline = Date.now() + (query.wait ?? 0) * 1000
          const abort = new AbortController()
          let page: FeedPage
          try {
            for (;;) {
              // Subscribe before reading, so a change committed between the read and the wait still wakes us.
              const remaining = deadline - Date.now()
              // Without LISTEN (the embedded database) only writers of this process that signal
              // after their commit wake the wait, so it also reads again every UNSIGNALLED_REREAD_MS.
              const slice = mailEvents(ctx).listening ? remaining : Math.min(remaining, UNSIGNALLED_REREAD_MS)
              const woken = remaining > 0 ? mailEvents(ctx).waitForChange(auth.orgId, slice, AbortSignal.any([abort.signal, request.signal])) : null
              page = await readFeed(ctx, auth.orgId, after, limit, filter)
              // A change that does not match the filters moves the cursor and the wait goes on.
              after = page.next
              if (page.changes.length || !woken) break
              await woken
              if (request.signal.aborted || mailEvents(ctx).ending) break
            }
          } finally {
            abort.abort()
          }
          return new Page(page.changes.map(presentChange), { total: page.total, limit, cursor: encodeCursor(ctx, auth.orgId, page.next) })
        }
        // a read that waits is woken by the primary's NOTIFY, and reads there; others may read on the replica
        return query.wait ? read(ctx) : onReadReplica(ctx, auth, request, read)
      },
      {
        query: t.Object({
          cursor: t.Optional(
            t.String({
              maxLength: 200,
              description: `meta.cursor of the previous page, or \`${EARLIEST}\` to replay the retained window (${CHANGES_RETENTION_DAYS} days); omitted = start now`,
            }),
          ),
          wait: t.Optional(
            t.Integer({
              minimum: 0,
              maximum: MAX_CHANGES_WAIT_SECONDS,
              description: `long-poll: when nothing matches, wait up to this many seconds (max ${MAX_CHANGES_WAIT_SECONDS}) for a matching change`,
            }),
          ),
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, default: 100, description: 'page size, 1 to 500' })),
          types: t.Optional(t.String({ maxLength: 1000, description: 'comma-separated types (email.received) or prefixes (email.*)' })),
          address: t.Optional(
            t.String({ maxLength: 320, description: 'only changes about this mailbox address (connection keys: always their bound address)' }),
          ),
        }),
        response: { 200: Paged(Change) },
        detail: {
          summary: 'Changes in order, resumable; long-poll with wait',
          description:
            `A total order per organization of what happened: mail received and sent, sends created, rescheduled, canceled and their relay outcomes, deliveries and their outcomes, domain verification, memories, function deployments and invocations, payments, wake runs. ` +
            `meta.cursor is never null: it is where to resume, even after an empty page, and it moves past changes the filters skip, so filters never create gaps. ` +
            `meta.total counts the matching changes after the cursor given, this page included. ` +
            `Changes are kept ${CHANGES_RETENTION_DAYS} days; a cursor older than that is 410 cursor_expired with details.earliest_cursor. ` +
            `Delivery is exactly once by position: a page never repeats a change of an earlier page resumed from its cursor. A change commits with what it records.`,
        },
      },
    )
    .get(
      '/cursor',
      async ({ auth }) => {
        const { head } = await feedBounds(ctx.sql, auth.orgId)
        return { cursor: encodeCursor(ctx, auth.orgId, head), seq: head }
      },
      { response: { 200: Cursor }, detail: { summary: 'The cursor of now', description: 'Resuming from it returns only changes committed after this call.' } },
    )
}
