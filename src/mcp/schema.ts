/**
 * TypeBox schemas as the plain JSON Schema an MCP client reads: a deep copy without TypeBox's
 * symbols, without our own annotation keywords (`error` messages, `x-` marks), which strict
 * JSON Schema validators refuse as unknown keywords, and without Elysia's string coercions.
 */
import { TransformKind, Type, type TObject, type TSchema } from '@sinclair/typebox'
import type { Page } from '../http/envelope'
import { cursors, type PageRequest } from '../http/pagination'
import type { AppContext } from '../context'
import { TOOL_PAGE } from '../http/operation'

const OWN_KEYWORDS = new Set(['error'])

/**
 * Elysia's t.Integer and t.Numeric also accept a numeric string (for query strings): `anyOf` of
 * that string and the number. Tool arguments are JSON, so publish the number alone.
 */
function coercion(schema: Record<string, unknown>): Record<string, unknown> | null {
  const anyOf = schema.anyOf as Record<string, unknown>[] | undefined
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return null
  const [text, number] = anyOf
  if (text?.type !== 'string' || (text.format !== 'integer' && text.format !== 'numeric')) return null
  const { anyOf: _, ...rest } = schema
  return { ...rest, ...number }
}

/**
 * The schema with each of Elysia's numeric-string coercions replaced by its number alone, still a
 * TypeBox schema: what a tool's arguments are validated with, as they are published.
 */
export function numbersOnly<T extends TSchema>(schema: T): T {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk)
    if (!value || typeof value !== 'object') return value
    const coerced = coercion(value as Record<string, unknown>)
    if (coerced) {
      // the number needs no decoding from a string
      const { [TransformKind]: _, ...number } = coerced as Record<PropertyKey, unknown>
      return number
    }
    const source = value as Record<PropertyKey, unknown>
    const out: Record<PropertyKey, unknown> = {}
    for (const key of Reflect.ownKeys(source)) out[key] = typeof key === 'symbol' ? source[key] : walk(source[key])
    return out
  }
  return walk(schema) as T
}

export function jsonSchema(schema: TSchema): Record<string, unknown> {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip)
    if (!value || typeof value !== 'object') return value
    const coerced = coercion(value as Record<string, unknown>)
    if (coerced) return strip(coerced)
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      if (OWN_KEYWORDS.has(k) || k.startsWith('x-')) continue
      out[k] =
        k === 'properties' || k === 'patternProperties' || k === '$defs'
          ? Object.fromEntries(Object.entries(v as object).map(([n, s]) => [n, strip(s)]))
          : strip(v)
    }
    return out
  }
  return strip(JSON.parse(JSON.stringify(schema))) as Record<string, unknown>
}

/** `limit` and `cursor`, as every list of the REST API takes them. */
export const PageInput = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'page size, 1 to 100 (default 20)' })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'the `cursor` of the previous page' })),
}

/** A page of items with the REST API's paging facts. */
export const PageOf = <T extends TSchema>(item: T): TObject =>
  Type.Object({
    items: Type.Array(item),
    total: Type.Integer({ description: 'how many match, across all pages' }),
    limit: Type.Integer(),
    cursor: Type.Union([Type.String(), Type.Null()], { description: 'pass it back as `cursor` for the next page; null when there is none' }),
  })

export const pageResult = <T>(page: Page<T>) => ({ items: page.data, total: page.meta.total, limit: page.meta.limit, cursor: page.meta.cursor })

/** A tool's page of a list, as its result: `cursors(ctx).read` with the tools' page size. */
export async function toolPage<T extends { id: string }, R>(
  ctx: AppContext,
  scope: string,
  query: { limit?: number; cursor?: string },
  fetch: (req: PageRequest) => Promise<{ rows: T[]; total: number }>,
  present: (row: T) => R,
) {
  return pageResult(await cursors(ctx).read(scope, query, fetch, present, TOOL_PAGE))
}
