/** Small TypeBox helpers shared by route schemas. */
import type { TLiteral, TNull, TSchema, TUnion } from '@sinclair/typebox'
import { t } from 'elysia'

/** One of a fixed list of strings, typed as their union (unlike `t.UnionEnum`, it has no implicit default). */
export function OneOf<const V extends readonly string[]>(values: V, options?: Parameters<typeof t.Union>[1]) {
  return t.Union(
    values.map(v => t.Literal(v)),
    options,
  ) as unknown as TUnion<{ -readonly [K in keyof V]: TLiteral<V[K]> }>
}

export const Nullable = <T extends TSchema>(schema: T, options?: Parameters<typeof t.Union>[1]): TUnion<[T, TNull]> => t.Union([schema, t.Null()], options)

/** The path parameter of one resource, `{id}`: a UUID (anything else is a 400 validation_error, not a lookup). */
export const IdParam = { id: t.String({ format: 'uuid' }) }

/** The path of one resource: `/{id}`, as a route's `params`. */
export const IdParams = t.Object(IdParam)

/** What a DELETE of one resource answers. */
export const Deleted = t.Object({ id: t.String({ format: 'uuid' }), deleted: t.Literal(true) })

/** An email address as the API accepts it (`Address` is its schema). */
export const ADDRESS = '^[^\\s@<>()\\[\\],;:\\\\"]+@[A-Za-z0-9.-]+\\.[A-Za-z0-9-]+$'

export const Address = t.String({
  pattern: ADDRESS,
  maxLength: 320,
  description: 'an email address such as agent@example.com',
  error: 'must be an email address',
})
