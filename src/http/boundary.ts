/**
 * What a request may carry, checked once at the edge (app.ts) for every route, before a
 * feature sees it:
 *
 * - Bodies are JSON (`application/json` or `application/*+json`) unless the route parses its
 *   own (`parse: 'text'`: the OAuth and device-login forms); anything else is `415`.
 * - Each route has a body limit: `MAX_BODY_BYTES` by default, larger only where a route asks
 *   with `bodyLimit(bytes)` in its `detail` (the OpenAPI document shows it as
 *   `x-max-body-bytes`). The limit is checked on the declared length and again while reading,
 *   so a chunked body cannot get past it.
 * - JSON nested deeper than `MAX_JSON_DEPTH` is refused by a linear scan before `JSON.parse`:
 *   parsing and validating 20,000 nested arrays blocked the process for seconds, 40,000
 *   overflowed the stack.
 * - No string the API reads (body strings and field names, form fields, query parameters,
 *   path parameters, headers) may hold a NUL or a lone UTF-16 surrogate: PostgreSQL text
 *   cannot store NUL, and a lone surrogate has no UTF-8 form. Refused with `400
 *   validation_error` naming the field, rather than stored altered.
 */
import type { AnyElysia } from 'elysia'
import { ApiError, errors } from '../errors'
import { wholeBodyOf } from '../request-context'
import { fieldName } from './validation'

/** Deepest nesting of arrays and objects accepted in a JSON body; our schemas use fewer than 8. */
export const MAX_JSON_DEPTH = 32
/**
 * Most array items and object members in one JSON body, unless the route asks for more with
 * `valueLimit`. Validating a body, and Elysia's report of a failure (which serializes the
 * whole value), cost time per value: half a million numbers held the event loop for 100 ms.
 * Our typed lists hold a few hundred entries at most.
 */
export const MAX_JSON_VALUES = 10_000

const LIMIT_KEY = 'x-max-body-bytes'
const VALUES_KEY = 'x-max-json-values'

/** Spread into a route's `detail` to accept bodies up to `bytes` instead of the default limit. */
export function bodyLimit(bytes: number): Record<string, number> {
  return { [LIMIT_KEY]: bytes }
}

/**
 * Spread into a route's `detail` to accept more than `MAX_JSON_VALUES` values: for a route that
 * stores free-form JSON (its schema is `t.Unknown()`, cheap to check).
 */
export function valueLimit(values: number): Record<string, number> {
  return { [VALUES_KEY]: values }
}

export interface BodyRule {
  limit: number
  maxValues: number
  /** the route parses its forms itself: it gets a form's text, and JSON parsed (its own checks refuse what it does not take) */
  ownParser: boolean
}

interface RouteLike {
  method: string
  path: string
  hooks: { parse?: unknown; detail?: Record<string, unknown> }
}

/** The body rule of each route of `app`, by `METHOD path`. */
export function bodyRules(app: AnyElysia, defaultLimit: number): Map<string, BodyRule> {
  const rules = new Map<string, BodyRule>()
  for (const route of app.routes as unknown as RouteLike[]) {
    const limit = route.hooks.detail?.[LIMIT_KEY]
    const values = route.hooks.detail?.[VALUES_KEY]
    const parse = ([] as unknown[]).concat(route.hooks.parse ?? [])
    const ownParser = parse.some(p => (typeof p === 'string' ? p : (p as { fn?: unknown })?.fn) === 'text')
    rules.set(`${route.method} ${route.path}`, {
      limit: typeof limit === 'number' ? limit : defaultLimit,
      maxValues: typeof values === 'number' ? values : MAX_JSON_VALUES,
      ownParser,
    })
  }
  return rules
}

/** The largest body any route of `app` accepts: what the server itself must let through. */
export function largestBodyLimit(app: AnyElysia, defaultLimit: number): number {
  return Math.max(defaultLimit, ...[...bodyRules(app, defaultLimit).values()].map(r => r.limit))
}

const tooLarge = (limit: number) => new ApiError('payload_too_large', `body: must be at most ${limit} bytes`)

/** The body's bytes, refusing more than `limit` whether or not a length was declared. */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > limit) throw tooLarge(limit)
  const whole = wholeBodyOf(request)
  if (whole) {
    if (whole.byteLength > limit) throw tooLarge(limit)
    return whole
  }
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]!
  const bytes = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    bytes.set(c, at)
    at += c.byteLength
  }
  return bytes
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function decode(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes)
  } catch {
    throw errors.validation('body', 'is not valid UTF-8')
  }
}

export function isJsonType(contentType: string): boolean {
  const type = contentType.toLowerCase()
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * Refuses JSON text nested deeper than `MAX_JSON_DEPTH` or holding more than `MAX_JSON_VALUES`
 * values, in one pass that skips over strings, so that the cost is linear in the length
 * whatever the shape.
 */
export function checkShape(text: string, maxValues = MAX_JSON_VALUES): void {
  let depth = 0
  let values = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 34 /* " */) {
      // jump to the closing quote: one not preceded by an odd run of backslashes
      for (;;) {
        const end = text.indexOf('"', i + 1)
        if (end < 0) return // unterminated: JSON.parse reports it
        let slashes = 0
        while (text.charCodeAt(end - 1 - slashes) === 92) slashes++
        i = end
        if (slashes % 2 === 0) break
      }
    } else if (c === 91 || c === 123 /* [ { */) {
      if (++depth > MAX_JSON_DEPTH) throw errors.validation('body', `is nested deeper than ${MAX_JSON_DEPTH} levels`)
    } else if (c === 93 || c === 125 /* ] } */) depth--
    // a comma separates two items or members: counting them counts the values to within one per container
    else if (c === 44 /* , */ && ++values >= maxValues) throw errors.validation('body', `holds more than ${maxValues} values`)
  }
}

/** Why a string cannot be accepted, or null. */
export function badText(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain NUL (\\u0000) characters'
  if (!s.isWellFormed()) return 'must not contain unpaired UTF-16 surrogates (such as \\ud800)'
  return null
}

/** Walks a parsed body (already depth-checked) and names the first string that `badText` refuses. */
export function checkStrings(value: unknown, part: string): void {
  // the path is kept as segments and joined only for the error: a body may hold a million values
  const path: (string | number)[] = []
  const fail = (reason: string) => errors.validation(fieldName(part, path.map(p => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')), reason)
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      const reason = badText(v)
      if (reason) throw fail(reason)
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item = v[i]
        if (item === null || (typeof item !== 'object' && typeof item !== 'string')) continue
        path.push(i)
        walk(item)
        path.pop()
      }
    } else if (v && typeof v === 'object') {
      for (const key in v) {
        const reason = badText(key)
        if (reason) throw fail(`field names ${reason}`)
        path.push(key)
        walk((v as Record<string, unknown>)[key])
        path.pop()
      }
    }
  }
  walk(value)
}

/** Checks each name and value of a query string or form body. */
export function checkParams(params: URLSearchParams, part: string): void {
  for (const [name, value] of params) {
    const nameReason = badText(name)
    if (nameReason) throw errors.validation(part, `parameter names ${nameReason}`)
    const reason = badText(value)
    if (reason) throw errors.validation(name, reason)
  }
}

/**
 * The parsed body of a request under `rule`: JSON (checked for depth and strings), or for a
 * route with its own parser the text (form fields checked). `undefined` for an empty body.
 */
export async function parseBody(request: Request, contentType: string, rule: BodyRule): Promise<unknown> {
  const bytes = await readBody(request, rule.limit)
  if (bytes.byteLength === 0) return undefined
  const type = contentType.toLowerCase()
  if (rule.ownParser) {
    const text = decode(bytes)
    if (type === 'application/x-www-form-urlencoded') checkParams(new URLSearchParams(text), 'body')
    else if (isJsonType(type)) return checkJson(text, rule.maxValues, false) ?? text
    else checkText(text)
    return text
  }
  if (!isJsonType(type)) {
    throw new ApiError('unsupported_media_type', `content-type: must be application/json${type ? `, not ${type}` : ' (none was given)'}`)
  }
  return checkJson(decode(bytes), rule.maxValues, true)
}

/** Parses JSON text after the depth check and checks its strings; a route with its own parser reports syntax errors itself. */
function checkJson(text: string, maxValues: number, strict: boolean): unknown {
  checkShape(text, maxValues)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    if (strict) throw errors.validation('body', 'is not valid JSON')
    return undefined
  }
  checkStrings(value, 'body')
  return value
}

function checkText(text: string) {
  const reason = badText(text)
  if (reason) throw errors.validation('body', reason)
}
