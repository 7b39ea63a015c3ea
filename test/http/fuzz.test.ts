/**
 * Property-based fuzzing of every operation of the OpenAPI document (fast-check): bodies
 * generated from each operation's own schema, then mutated (wrong types, hostile strings,
 * dropped or extra fields, other JSON, other content types), path and query parameters
 * plausible or hostile, headers random, with a valid credential or without one. The property:
 * no answer is a 5xx, and every error answer is the envelope the spec describes (the OAuth
 * error body on /oauth/*, or an HTML page where the operation is a page).
 *
 * FUZZ_RUNS sets the runs per operation (default 12, about half a minute for the whole API on
 * two cores); a failure prints fast-check's seed and the shrunk request to reproduce it.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { setApiLimitCommand } from '../../src/admin/commands'
import { memoryResolver } from '../../src/dns/resolver'
import { ERROR_STATUS } from '../../src/errors'
import { createOrg, testApp, testSql } from '../helpers/app'

type Json = Record<string, any>

const RUNS = Number(process.env.FUZZ_RUNS ?? 12)
const app = await testApp({}, { resolver: memoryResolver() })
const org = await createOrg({ plan: 'platinum' })
// thousands of requests: the organization limit would turn the run into a 429 test
await setApiLimitCommand(await testSql(), org.orgId, '100000000')
const doc: Json = (await app.request('GET', '/v1/openapi')).body

/** Strings no well-behaved client sends. */
const hostile = fc.constantFrom(
  '',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\uffff',
  '%00',
  '%',
  '%ZZ',
  '%ED%A0%80',
  '../../etc/passwd',
  "'; select pg_sleep(1); --",
  '<script>alert(1)</script>',
  'x'.repeat(5000),
  '9'.repeat(40),
  '-1',
  '1e309',
  'null',
  '{}',
  '[]',
  'a@b',
  '00000000-0000-0000-0000-000000000000',
  '\r\nX-Injected: 1',
)
const anyString = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 20 }), hostile)

function deref(schema: Json): Json {
  if (schema?.$ref) return doc.components.schemas[schema.$ref.split('/').pop()] ?? {}
  return schema ?? {}
}

/** Values that mostly fit `schema`, so requests get past validation into the handlers. */
function fromSchema(input: Json, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(input)
  if (depth > 5) return fc.jsonValue({ maxDepth: 2 })
  const variants = schema.anyOf ?? schema.oneOf
  if (variants) return fc.oneof(...variants.map((v: Json) => fromSchema(v, depth + 1)))
  if ('const' in schema) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...schema.enum)
  switch (schema.type) {
    case 'string': {
      if (schema.format === 'uuid') return fc.uuid()
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map(d => d.toISOString())
      if (schema.format === 'email') return fc.emailAddress()
      if (schema.pattern) {
        try {
          return fc.stringMatching(new RegExp(schema.pattern)).filter(s => s.length <= (schema.maxLength ?? 1000))
        } catch {
          return fc.string()
        }
      }
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) })
    }
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1_000_000 })
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array':
      return fc.array(fromSchema(schema.items ?? {}, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) })
    case 'object': {
      const props: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [name, p] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) props[name] = fromSchema(p, depth + 1)
      if (!Object.keys(props).length) return fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
      return fc.record(props, { requiredKeys: (schema.required ?? []).filter((k: string) => k in props) })
    }
    default:
      return fc.jsonValue({ maxDepth: 3 })
  }
}

/** One change to a value: a field dropped, replaced by another type or a hostile string, or one added. */
function mutate(value: unknown): fc.Arbitrary<unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return fc.oneof(fc.jsonValue({ maxDepth: 2 }), anyString)
  const keys = Object.keys(value)
  const replacement = fc.oneof(anyString, fc.jsonValue({ maxDepth: 2 }), fc.constant(null), fc.integer())
  return fc.oneof(
    keys.length ? fc.constantFrom(...keys).map(k => Object.fromEntries(Object.entries(value).filter(([key]) => key !== k))) : fc.constant(value),
    keys.length ? fc.tuple(fc.constantFrom(...keys), replacement).map(([k, v]) => ({ ...value, [k]: v })) : fc.constant(value),
    fc.tuple(anyString, replacement).map(([k, v]) => ({ ...value, [k]: v })),
  )
}

interface Generated {
  path: string
  query: string
  headers: Record<string, string>
  body?: string
}

/** Header values must be bytes without CR, LF or NUL, or `Headers` refuses them before we can send. */
const headerValue = fc.oneof(
  fc.string({ maxLength: 60 }).map(s => s.replace(/[^\x20-\x7e]/g, '')),
  fc.constantFrom('*', '"1"', 'W/"x"', '0', ''),
)

/**
 * Half the requests are plausible (the credential, parameters and body drawn from the
 * operation's schemas, JSON as declared), so that they reach the handlers; the other half are
 * hostile in every part.
 */
function requestArbitrary(path: string, op: Json): fc.Arbitrary<Generated> {
  return fc.oneof(requestOf(path, op, false), requestOf(path, op, true))
}

function requestOf(path: string, op: Json, hostileMode: boolean): fc.Arbitrary<Generated> {
  const params: Json[] = op.parameters ?? []
  const pathParams = params.filter(p => p.in === 'path')
  // a long-poll would only make the run slow; a made-up cursor is refused before the handler, so plausible requests leave it out
  const queryParams = params.filter(p => p.in === 'query' && p.name !== 'wait' && (hostileMode || p.name !== 'cursor'))
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v))
  const pathValue = hostileMode ? fc.oneof(fc.uuid(), anyString, fc.constantFrom('%ZZ', '%00', '%ED%A0%80')) : fc.uuid()
  const pathArb = fc.tuple(...pathParams.map(p => (hostileMode ? pathValue : fc.oneof(pathValue, fromSchema(p.schema ?? {}).map(text))))).map(values => {
    let p = path
    pathParams.forEach((param, i) => {
      const v = values[i]!
      // a lone surrogate cannot be percent-encoded: send the UTF-8 bytes a surrogate would have
      p = p.replace(`{${param.name}}`, /^%/.test(v) ? v : v.isWellFormed() ? encodeURIComponent(v) : '%ED%A0%80')
    })
    return p
  })
  const valueArbs: Record<string, fc.Arbitrary<string>> = Object.fromEntries(
    queryParams.map(p => [p.name, hostileMode ? fc.oneof(fromSchema(p.schema ?? {}).map(text), anyString) : fromSchema(p.schema ?? {}).map(text)]),
  )
  const required: string[] = queryParams.filter(p => p.required && !hostileMode).map(p => p.name)
  const declared = fc.record(valueArbs, { requiredKeys: required as never[] })
  const queryArb = fc
    .tuple(
      declared,
      hostileMode ? fc.dictionary(fc.string({ maxLength: 8 }), anyString, { maxKeys: 2 }) : fc.constant({}),
      hostileMode ? fc.boolean() : fc.constant(false),
    )
    .map(([known, extra, raw]) => {
      const search = new URLSearchParams()
      for (const [k, v] of Object.entries({ ...known, ...extra })) search.append(k, String(v))
      const qs = search.toString()
      return raw ? `${qs}${qs ? '&' : ''}%E0%A4%A=%` : qs
    })
  const json = op.requestBody?.content?.['application/json']?.schema
  const form = op.requestBody?.content?.['application/x-www-form-urlencoded']?.schema
  const schema = json ?? form
  const encode = (v: unknown) =>
    form
      ? {
          body: new URLSearchParams(Object.entries((v as Json) ?? {}).map(([k, x]) => [k, String(x)] as [string, string])).toString(),
          type: 'application/x-www-form-urlencoded',
        }
      : { body: JSON.stringify(v), type: 'application/json' }
  const bodyArb: fc.Arbitrary<{ body?: string; type?: string }> = !hostileMode
    ? schema
      ? fromSchema(schema).map(encode)
      : fc.constant({})
    : fc.oneof(
        {
          weight: 3,
          arbitrary: (schema ? fc.oneof(fromSchema(schema).chain(mutate), fc.jsonValue({ maxDepth: 3 })) : fc.jsonValue({ maxDepth: 2 })).map(encode),
        },
        {
          weight: 1,
          arbitrary: fc
            .tuple(
              anyString,
              fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/xml', ''),
            )
            .map(([body, type]) => ({ body, type })),
        },
        { weight: 1, arbitrary: fc.constant({}) },
      )
  const headersArb = hostileMode
    ? fc.record(
        {
          authorization: fc.oneof(
            { weight: 2, arbitrary: fc.constant(`Bearer ${org.key}`) },
            fc.constantFrom('Bearer svc_nope', 'Basic Zm9vOmJhcg==', 'Bearer', ''),
            headerValue.map(v => `Bearer ${v}`),
          ),
          'idempotency-key': headerValue,
          'if-match': headerValue,
          'if-none-match': headerValue,
          accept: fc.constantFrom('application/json', 'text/html', 'text/plain', '*/*'),
        },
        { requiredKeys: ['authorization'] },
      )
    : fc.constant({ authorization: `Bearer ${org.key}` } as Record<string, string>)
  return fc.record({ path: pathArb, query: queryArb, headers: headersArb, body: bodyArb }).map(({ path: p, query, headers, body }) => {
    const h: Record<string, string> = { ...headers }
    if (!h.authorization) delete h.authorization
    if (body.type) h['content-type'] = body.type
    return { path: p, query, headers: h, body: body.body }
  })
}

/** What the answer to `path` may look like when it is not a success. */
function checkAnswer(method: string, path: string, status: number, type: string, text: string) {
  const where = `${method} ${path} -> ${status}: ${text.slice(0, 300)}`
  if (status >= 500) throw new Error(`5xx: ${where}`)
  if (status < 400) return
  if (type.startsWith('text/html') && (path.startsWith('/oauth/') || path.startsWith('/cli/') || path.startsWith('/x402/pay/') || path.startsWith('/drafts/')))
    return
  let body: Json
  try {
    body = JSON.parse(text)
  } catch {
    throw new Error(`not JSON: ${where}`)
  }
  if (path.startsWith('/oauth/')) {
    if (typeof body.error !== 'string') throw new Error(`not an OAuth error body: ${where}`)
    return
  }
  if (path === '/graphql') {
    // the GraphQL shape: errors, each with a message and our code in extensions.code, the first one's status
    const errs = body.errors as Json[] | undefined
    const codes = (errs ?? []).map(e => (e.extensions as Json | undefined)?.code as string)
    const fine =
      Array.isArray(errs) &&
      errs.length > 0 &&
      errs.every(e => typeof e.message === 'string') &&
      codes.every(c => c in ERROR_STATUS) &&
      ERROR_STATUS[codes[0] as keyof typeof ERROR_STATUS] === status
    if (!fine) throw new Error(`outside the GraphQL error shape: ${where}`)
    return
  }
  const ok =
    body.success === false &&
    typeof body.error?.code === 'string' &&
    body.error.code in ERROR_STATUS &&
    ERROR_STATUS[body.error.code as keyof typeof ERROR_STATUS] === status &&
    typeof body.error.message === 'string' &&
    Object.keys(body).every(k => k === 'success' || k === 'error') &&
    Object.keys(body.error).every(k => ['code', 'message', 'details', 'gates'].includes(k))
  if (!ok) throw new Error(`outside the error envelope: ${where}`)
}

let ip = 0
/** operations that answered 2xx at least once: the generated requests get past validation */
const succeeded = new Set<string>()
const lastRefusal = new Map<string, string>()
const operations = Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
)

describe('fuzz: every operation of the OpenAPI document', () => {
  test('the document has the operations to drive', () => {
    expect(operations.length).toBeGreaterThan(50)
  })

  for (const { path, method, op } of operations) {
    test(`${method} ${path}`, async () => {
      await fc.assert(
        fc.asyncProperty(requestArbitrary(path, op), async req => {
          const headers = new Headers(req.headers)
          // a new client address each time: the per-address limit would answer 429 to everything after a while
          headers.set('x-forwarded-for', `198.18.${(ip >> 8) & 255}.${ip++ & 255}`)
          const url = `http://api.test.local${req.path}${req.query ? `?${req.query}` : ''}`
          const res = await app.app.handle(new Request(url, { method, headers, body: method === 'GET' || method === 'HEAD' ? undefined : req.body }))
          // an event stream that opened runs until it is closed: its head is the answer
          if (res.ok && res.headers.get('content-type')?.startsWith('text/event-stream')) {
            await res.body?.cancel()
            succeeded.add(`${method} ${path}`)
            return
          }
          const text = await res.text()
          checkAnswer(method, req.path, res.status, res.headers.get('content-type') ?? '', text)
          if (res.status < 300) succeeded.add(`${method} ${path}`)
          else if (process.env.FUZZ_STATS && req.headers.authorization === `Bearer ${org.key}`)
            lastRefusal.set(`${method} ${path}`, `${res.status} ${text.slice(0, 160)} <- ${req.query} ${req.body?.slice(0, 100)}`)
        }),
        { numRuns: RUNS },
      )
    }, 60_000)
  }

  test('the generated requests reach the handlers: a quarter of the operations answered a success at least once', () => {
    if (process.env.FUZZ_STATS)
      console.log([...operations.map(o => `${o.method} ${o.path}`).filter(o => !succeeded.has(o))].map(o => `${o}: ${lastRefusal.get(o)}`).join('\n'))
    expect(succeeded.size / operations.length).toBeGreaterThan(0.25)
  })
})
