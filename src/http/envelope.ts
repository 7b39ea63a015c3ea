/**
 * The v1 envelopes. Handlers return their payload (or a `Page`), routes declare the payload's
 * schema (`Ok(schema)`, `Paged(item)`), Elysia validates the payload against it, and app.ts
 * wraps it once into `{success: true, data, meta?}`. The OpenAPI generator adds the envelope to
 * the documented schemas the same way.
 */
import { t, type TSchema } from 'elysia'
import { ERROR_STATUS } from '../errors'

export interface Meta {
  total: number
  limit: number
  cursor: string | null
}

/** A page of a list: returned by list handlers, rendered as `data` plus `meta`. */
export class Page<T> {
  constructor(
    readonly data: T[],
    readonly meta: Meta,
  ) {}
}

export const MetaSchema = t.Object({
  total: t.Integer({
    description:
      'total count of matching items. Lists that grow with the mail count up to a cap, and a total at the cap means at least that many: emails with a filter other than thread_id and threads up to 10,000, search up to 100',
  }),
  limit: t.Integer({ description: 'page size' }),
  cursor: t.Union([t.String(), t.Null()], { description: 'pass as `cursor` to fetch the next page; null when there are no more' }),
})

export const ErrorSchema = t.Object(
  {
    success: t.Literal(false),
    error: t.Object({
      // the closed list of codes, so that generated clients type them
      code: t.Union(
        Object.keys(ERROR_STATUS).map(code => t.Literal(code)),
        { description: 'stable machine-readable code; branch on this, never on message' },
      ),
      message: t.String({ description: 'human-readable; validation errors read `field: reason`' }),
      details: t.Optional(t.Record(t.String(), t.Unknown())),
      gates: t.Optional(t.Array(t.Record(t.String(), t.Unknown()))),
    }),
  },
  { $id: '#/components/schemas/Error' },
)

/** Marks how the OpenAPI generator documents a response schema. */
export const ENVELOPE = 'x-envelope'

/** A success response carrying `data` of this schema. */
export const Ok = <T extends TSchema>(data: T): T => data

/** A list response: the handler returns a `Page` of these items. */
export const Paged = <T extends TSchema>(item: T) => t.Object({ data: t.Array(item), meta: MetaSchema }, { [ENVELOPE]: 'paged' })

/** A response documented as is, without the envelope (the handler returns a Response). */
export const Bare = <T extends TSchema>(schema: T): T => ({ ...schema, [ENVELOPE]: 'none' })

/** Marks the media type of a response the handler returns as a Response (default application/json). */
export const MEDIA_TYPE = 'x-media-type'

/** A Server-Sent Events response, documented as `text/event-stream` with the schema of each event's `data`. */
export const EventStream = <T extends TSchema>(event: T): T => ({ ...event, [ENVELOPE]: 'none', [MEDIA_TYPE]: 'text/event-stream' })

type Set = { status?: number | string; headers: Record<string, string | number | string[]> }

/**
 * Renders a handler's return value in the success envelope: the JSON text, with its content type
 * added to the headers the handler set. Elysia makes the one Response of it with the status and
 * headers of `set` (returning a Response here made it copy that into a second one).
 */
export function envelope(value: unknown, set: Set, paged: boolean): Response | string {
  if (value instanceof Response) return value
  const page = value as Page<unknown>
  const body = paged ? { success: true, data: page.data, meta: page.meta } : { success: true, data: value ?? null }
  set.headers['content-type'] = 'application/json;charset=utf-8'
  return JSON.stringify(body)
}
