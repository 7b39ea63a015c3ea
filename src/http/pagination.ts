/**
 * Cursor pagination. Lists are ordered by UUIDv7 id (newest first), so a cursor is the last id
 * seen; it is signed so clients treat it as opaque, and a tampered one is a validation_error.
 */
import { t } from 'elysia'
import { safeEqual, type ServerKeys } from '../crypto'
import { Page } from './envelope'
import { errors } from '../errors'
import { perProcess } from '../context'

// the list statements every feature builds its pages with
export { COUNT_CAP, type ChildListQuery, type ListQuery, listPage, listPagesOf, type PageRequest } from './page-queries'
import type { PageRequest } from './page-queries'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export const pageQuery = (max = 100, fallback = 50) => ({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: max, default: fallback, description: `page size, 1 to ${max}` })),
  cursor: t.Optional(t.String({ maxLength: 200, description: 'the `meta.cursor` of the previous page' })),
})

export class Cursors {
  constructor(private readonly keys: ServerKeys) {}

  encode(scope: string, lastId: string): string {
    const body = Buffer.from(lastId).toString('base64url')
    return `${body}.${this.signature(scope, body)}`
  }

  /** 128 bits of HMAC are plenty for a cursor and keep it short. */
  private signature(scope: string, body: string): string {
    return this.keys.sign(`cursor:${scope}`, body).slice(0, 22)
  }

  /** `scope` names the list, so a cursor of one list is refused by another. */
  decode(scope: string, cursor: string | undefined): string | null {
    const id = this.decodeValue(scope, cursor)
    if (id !== null && !UUID.test(id)) throw errors.validation('cursor', 'is not a cursor returned by this list')
    return id
  }

  /** Like `decode`, for lists ordered by something other than an id (a key, a sequence number). */
  decodeValue(scope: string, cursor: string | undefined): string | null {
    if (cursor === undefined) return null
    const [body, sig, extra] = cursor.split('.')
    if (!body || !sig || extra !== undefined || !safeEqual(this.signature(scope, body), sig)) {
      throw errors.validation('cursor', 'is not a cursor returned by this list')
    }
    return Buffer.from(body, 'base64url').toString()
  }

  request(scope: string, query: { limit?: number; cursor?: string }, fallback = 50): PageRequest {
    return { limit: query.limit ?? fallback, after: this.decode(scope, query.cursor) }
  }

  /**
   * A list read whole: the page `query` asks for, its `limit + 1` rows and total from `fetch`,
   * and the page built from them (`request`, then `page`).
   */
  async read<T extends { id: string }, R>(
    scope: string,
    query: { limit?: number; cursor?: string },
    fetch: (req: PageRequest) => Promise<{ rows: T[]; total: number }>,
    present: (row: T) => R,
    fallback?: number,
  ): Promise<Page<R>> {
    const req = this.request(scope, query, fallback)
    const { rows, total } = await fetch(req)
    return this.page(scope, rows, req, total, present)
  }

  /**
   * `read` for a list ordered by something other than an id (a memory's key): the cursor holds
   * `keyOf` of the page's last row.
   */
  async readKeyed<T, R>(
    scope: string,
    query: { limit?: number; cursor?: string },
    fetch: (req: PageRequest) => Promise<{ rows: T[]; total: number }>,
    present: (row: T) => R,
    keyOf: (row: T) => string,
    fallback = 50,
  ): Promise<Page<R>> {
    const req = { limit: query.limit ?? fallback, after: this.decodeValue(scope, query.cursor) }
    const { rows, total } = await fetch(req)
    const more = rows.length > req.limit
    const items = more ? rows.slice(0, req.limit) : rows
    const last = items.at(-1)
    return new Page(items.map(present), { total, limit: req.limit, cursor: more && last ? this.encode(scope, keyOf(last)) : null })
  }

  /** Builds the page from `limit + 1` fetched rows: the extra row only says there is more. */
  page<T extends { id: string }, R>(scope: string, rows: T[], req: PageRequest, total: number, present: (row: T) => R): Page<R> {
    const more = rows.length > req.limit
    const items = more ? rows.slice(0, req.limit) : rows
    const last = items.at(-1)
    return new Page(items.map(present), { total, limit: req.limit, cursor: more && last ? this.encode(scope, last.id) : null })
  }
}

/** This process's cursor codec (signed with the server keys). */
export const cursors = perProcess(ctx => new Cursors(ctx.keys))
