/** GET /v1/events/stream: the changes feed as Server-Sent Events (the machinery: src/changes/stream.ts). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { EventStream } from '../http/envelope'
import { errors } from '../errors'
import { getInbox } from '../mail/inbox-queries'
import { decodeCursor, feedBounds, parseTypes } from '../changes/feed'
import { Change } from '../changes/model'
import { eventStreams, HEARTBEAT_MS } from '../changes/stream'

export function eventStreamRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/events', tags: ['Changes'] }).use(authenticated(ctx)).get(
    '/stream',
    async ({ auth, query, request }) => {
      const types = parseTypes(query.types)
      const asked = [query.inbox_id ? (await getInbox(ctx.sql, auth.orgId, query.inbox_id)).address : undefined, query.address?.trim().toLowerCase()]
      const addresses = new Set(asked.filter(a => a !== undefined))
      if (addresses.size > 1) throw errors.validation('address', 'names another address than inbox_id; give one of them')
      const [address = null] = addresses
      if (auth.boundAddress && address !== null && address !== auth.boundAddress) throw errors.forbidden(`connection key: acts only for ${auth.boundAddress}`)
      // a reconnect's Last-Event-ID is newer than the cursor of the URL it first opened
      const resume = request.headers.get('last-event-id')?.trim() || query.cursor
      const after = resume === undefined ? (await feedBounds(ctx.sql, auth.orgId)).head : decodeCursor(ctx, auth.orgId, resume)
      return eventStreams(ctx).stream(ctx, {
        orgId: auth.orgId,
        after,
        filter: { ...types, address: auth.boundAddress ?? address },
        cap: ctx.config.EVENT_STREAMS_PER_ORG,
        signal: request.signal,
      })
    },
    {
      query: t.Object({
        cursor: t.Optional(
          t.String({
            maxLength: 200,
            description:
              'where to start: a cursor of GET /v1/changes or an event id of a stream, or `earliest`; omitted = now. The Last-Event-ID header wins over it',
          }),
        ),
        types: t.Optional(t.String({ maxLength: 1000, description: 'comma-separated types (email.received) or prefixes (email.*)' })),
        inbox_id: t.Optional(
          t.String({ format: 'uuid', description: "only changes about this inbox's address (404 for an inbox that is not the organization's)" }),
        ),
        address: t.Optional(t.String({ maxLength: 320, description: 'only changes about this mailbox address (connection keys: always their bound address)' })),
      }),
      response: { 200: EventStream(Change) },
      detail: {
        summary: 'The changes feed, pushed as Server-Sent Events',
        description:
          "Every change of GET /v1/changes, as it commits, on one open response (`text/event-stream`): for the organization, one inbox (`inbox_id`), one address (`address`), or a connection key's bound address (always). " +
          'Each event is `id: <cursor>`, `event: <change type>`, `data: <the change as JSON>`. The id is the feed cursor after that change: reconnect with the `Last-Event-ID` header (EventSource does) or `?cursor=` and the stream resumes exactly after it, nothing lost or repeated; it is also a cursor for GET /v1/changes. ' +
          `A comment line (\`: heartbeat\`) comes every ${HEARTBEAT_MS / 1000} s. ` +
          `An organization may hold EVENT_STREAMS_PER_ORG (default 20) open streams on each api process; past that, 429 rate_limited with Retry-After. ` +
          'A cursor older than retention is 410 cursor_expired before the stream starts. The stream ends when the server stops; reconnect with Last-Event-ID.',
      },
    },
  )
}
