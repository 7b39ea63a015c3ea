/** The local outbox: what the embedded relay kept instead of sending (development and tests). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { authenticated } from '../../http/auth'
import { Ok, Paged } from '../../http/envelope'
import { pageQuery, cursors } from '../../http/pagination'
import { iso } from '../../http/timestamps'
import { getOutbox } from './outbox'
import { listOutbox, type OutboxRow } from './outbox-queries'
import { Summary, Message } from './outbox.model'
import { IdParams } from '../../http/schema'

const present = (r: OutboxRow) => ({
  id: r.id,
  rcpt: r.rcpt,
  envelope_from: r.envelope_from,
  subject: r.subject,
  message_id: r.message_id,
  created_at: iso(r.created_at)!,
})

const ABOUT =
  'Without SMTP_RELAY_URL the service sends nothing to the outside world: mail to addresses it hosts is delivered to them directly, ' +
  'and mail to any other recipient is kept here, one entry per recipient. With an SMTP relay configured this list stays empty.'

export function outboxRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/outbound/outbox', tags: ['Sending'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `outbox:${auth.orgId}`
        return cursors(ctx).read(scope, query, page => listOutbox(ctx.sql, auth.orgId, page), present)
      },
      {
        query: t.Object(pageQuery()),
        response: { 200: Paged(Summary) },
        detail: { summary: 'List the local outbox', description: `Newest first. ${ABOUT}` },
      },
    )
    .get(
      '/:id',
      async ({ auth, params }) => {
        const row = await getOutbox(ctx.sql, auth.orgId, params.id)
        return { ...present(row), raw: row.raw }
      },
      {
        params: IdParams,
        response: { 200: Ok(Message) },
        detail: { summary: 'Get a local outbox message', description: `With the raw message text. ${ABOUT}` },
      },
    )
}
