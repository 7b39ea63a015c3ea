/**
 * The v1 envelopes. Handlers return their payload (or a `Page`); app.ts wraps it once into
 * `{success: true, data, meta?}`. These schemas are what routes declare as responses.
 */
import { t, type TSchema } from 'elysia'

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
  total: t.Integer({ description: 'total count of matching items' }),
  limit: t.Integer({ description: 'page size' }),
  cursor: t.Union([t.String(), t.Null()], { description: 'pass as `cursor` to fetch the next page; null when there are no more' }),
})

export const ErrorSchema = t.Object(
  {
    success: t.Literal(false),
    error: t.Object({
      code: t.String({ description: 'stable machine-readable code; branch on this, never on message' }),
      message: t.String({ description: 'human-readable; validation errors read `field: reason`' }),
      details: t.Optional(t.Record(t.String(), t.Unknown())),
      gates: t.Optional(t.Array(t.Record(t.String(), t.Unknown()))),
    }),
  },
  { $id: '#/components/schemas/Error' },
)

export const Ok = <T extends TSchema>(data: T) => t.Object({ success: t.Literal(true), data })

export const Paged = <T extends TSchema>(item: T) =>
  t.Object({ success: t.Literal(true), data: t.Array(item), meta: MetaSchema })

/** Wraps a handler's return value in the success envelope (idempotent for already wrapped values). */
export function envelope(value: unknown): unknown {
  if (value instanceof Response) return value
  if (value instanceof Page) return { success: true, data: value.data, meta: value.meta }
  return { success: true, data: value ?? null }
}
