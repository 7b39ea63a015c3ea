/** Turns TypeBox/Elysia validation issues into the contract's `field: reason` messages. */
import type { Static, TSchema } from '@sinclair/typebox'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import { ApiError } from '../errors'

/** `/rules/event_types/0` → `rules.event_types[0]`; the root of a part is the part's name. */
export function fieldName(part: string, path: string): string {
  if (!path || path === '/') return part
  return path
    .split('/')
    .slice(1)
    .map(seg => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '')
}

function expectedType(schema: Record<string, unknown>): string | undefined {
  const variants = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined
  if (variants) {
    // Elysia accepts a query integer as "an integer, or a string that parses as one": name the integer
    const coercion = (v: Record<string, unknown>) => v.type === 'string' && ['integer', 'numeric', 'boolean'].includes(v.format as string)
    const real = variants.length > 1 && variants.some(coercion) ? variants.filter(v => !coercion(v)) : variants
    const types = [...new Set(real.map(v => expectedType(v)).filter(Boolean))]
    return types.join(' or ')
  }
  if ('const' in schema) return JSON.stringify(schema.const)
  if (schema.type === 'integer') return 'an integer'
  if (schema.type === 'number') return 'a number'
  if (schema.type === 'string') return 'a string'
  if (schema.type === 'boolean') return 'a boolean'
  if (schema.type === 'array') return 'an array'
  if (schema.type === 'object') return 'an object'
  if (schema.type === 'null') return 'null'
  return undefined
}

/** A reason phrased for people, from one validation issue. */
export function reasonOf(issue: Pick<ValueError, 'type' | 'schema' | 'message'>): string {
  const schema = issue.schema as unknown as Record<string, unknown>
  if (typeof schema.error === 'string') return schema.error
  switch (issue.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required'
    case ValueErrorType.ObjectAdditionalProperties:
      return 'is not a known field'
    case ValueErrorType.StringMinLength:
      return schema.minLength === 1 ? 'must not be empty' : `must be at least ${schema.minLength} characters`
    case ValueErrorType.StringMaxLength:
      return `must be at most ${schema.maxLength} characters`
    case ValueErrorType.StringPattern:
    case ValueErrorType.StringFormat:
      return typeof schema.description === 'string' ? `must be ${schema.description}` : 'has an invalid format'
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return `must be at least ${schema.minimum}`
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `must be at most ${schema.maximum}`
    case ValueErrorType.ArrayMinItems:
      return schema.minItems === 1 ? 'must not be empty' : `must have at least ${schema.minItems} items`
    case ValueErrorType.ArrayMaxItems:
      return `must have at most ${schema.maxItems} items`
    case ValueErrorType.Literal:
      return `must be ${JSON.stringify(schema.const)}`
    case ValueErrorType.Union: {
      const variants = (schema.anyOf ?? []) as Record<string, unknown>[]
      const literals = variants.filter(v => 'const' in v).map(v => String(v.const))
      if (literals.length === variants.length && literals.length) return `must be one of ${literals.join(', ')}`
      const expected = expectedType(schema)
      return expected ? `must be ${expected}` : 'has an invalid value'
    }
    default: {
      const expected = expectedType(schema)
      return expected ? `must be ${expected}` : issue.message.toLowerCase()
    }
  }
}

type Issue = Pick<ValueError, 'path' | 'type' | 'schema' | 'message'>

function kindOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' && Number.isInteger(value) ? 'integer' : typeof value
}

function accepts(schema: Record<string, unknown>, kind: string): boolean {
  const type = schema.type
  if ('const' in schema) return kindOf(schema.const) === kind || (kind === 'integer' && typeof schema.const === 'number')
  return type === kind || (type === 'number' && kind === 'integer')
}

function at(root: unknown, path: string): unknown {
  let value = root
  for (const seg of path.split('/').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[seg.replace(/~1/g, '/').replace(/~0/g, '~')]
  }
  return value
}

/**
 * A union failure says "must be a string or an array", which helps nobody who sent a string:
 * when the value has the type of one of the variants, report that variant's own failures
 * instead (`to: must be an email address`, `to[1]: must be an email address`).
 */
export function explainUnions(issues: Issue[], root: unknown, depth = 0): Issue[] {
  return issues.flatMap(issue => {
    const schema = issue.schema as unknown as Record<string, unknown>
    const variants = schema.anyOf as Record<string, unknown>[] | undefined
    if (issue.type !== ValueErrorType.Union || !variants || typeof schema.error === 'string' || depth > 4) return [issue]
    // a list of literals already reads well ("must be one of a, b"); a query coercion is named by expectedType
    if (variants.every(v => 'const' in v) || variants.some(v => v.type === 'string' && ['integer', 'numeric', 'boolean'].includes(v.format as string)))
      return [issue]
    const value = at(root, issue.path)
    const kind = kindOf(value)
    const matching = variants.filter(v => accepts(v, kind))
    if (matching.length !== 1) return [issue]
    const variant = matching[0]!
    const inner = [...Value.Errors(variant as unknown as TSchema, value)].map(e => ({ ...e, path: issue.path + e.path }))
    return inner.length ? explainUnions(inner, root, depth + 1) : [issue]
  })
}

/** The validation_error of `issues` about `value`, each `field: reason` under `part` (`body`, `messages[3]`). */
export function validationError(part: string, issues: Issue[], value: unknown): ApiError {
  const explained = explainUnions(issues.length ? issues : [{ path: '', type: 0 as ValueErrorType, schema: {} as never, message: 'is invalid' }], value)
  // a missing field is reported once, as missing, not also as the wrong type
  const missing = new Set(explained.filter(i => i.type === ValueErrorType.ObjectRequiredProperty).map(i => i.path))
  const relevant = explained.filter(i => !missing.has(i.path) || i.type === ValueErrorType.ObjectRequiredProperty)
  return new ApiError('validation_error', [...new Set(relevant.map(i => `${fieldName(part, i.path)}: ${reasonOf(i)}`))].join('; '))
}

/** `value` with the schema's defaults filled in, when it is valid; else its validation_error, fields named under `part`. */
export function checkValue<T extends TSchema>(schema: T, value: unknown, part: string): Static<T> {
  const filled = Value.Default(schema, structuredClone(value))
  if (Value.Check(schema, filled)) return filled as Static<T>
  throw validationError(part, [...Value.Errors(schema, filled)], filled)
}
