/** Turns TypeBox/Elysia validation issues into the contract's `field: reason` messages. */
import { ValueErrorType, type ValueError } from '@sinclair/typebox/value'

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
