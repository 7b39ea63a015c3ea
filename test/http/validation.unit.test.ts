import { describe, expect, test } from 'bun:test'
import { ValueErrorType } from '@sinclair/typebox/value'
import { fieldName, reasonOf } from '../../src/http/validation'

describe('fieldName', () => {
  test('the root of a part is the part name', () => {
    expect(fieldName('body', '')).toBe('body')
    expect(fieldName('query', '/')).toBe('query')
  })

  test('a top-level property', () => {
    expect(fieldName('body', '/name')).toBe('name')
  })

  test('nested properties use dots and array indexes use brackets', () => {
    expect(fieldName('body', '/rules/event_types/0')).toBe('rules.event_types[0]')
    expect(fieldName('body', '/to/2/address')).toBe('to[2].address')
  })

  test('a top-level array index', () => {
    expect(fieldName('body', '/0/name')).toBe('[0].name')
  })

  test('JSON pointer escapes are decoded', () => {
    expect(fieldName('body', '/headers/a~1b/c~0d')).toBe('headers.a/b.c~d')
  })
})

describe('reasonOf', () => {
  const issue = (type: ValueErrorType, schema: Record<string, unknown>, message = 'raw') => ({ type, schema: schema as never, message })

  test('required, unknown and length reasons', () => {
    expect(reasonOf(issue(ValueErrorType.ObjectRequiredProperty, { type: 'string' }))).toBe('is required')
    expect(reasonOf(issue(ValueErrorType.ObjectAdditionalProperties, {}))).toBe('is not a known field')
    expect(reasonOf(issue(ValueErrorType.StringMinLength, { type: 'string', minLength: 1 }))).toBe('must not be empty')
    expect(reasonOf(issue(ValueErrorType.StringMaxLength, { type: 'string', maxLength: 100 }))).toBe('must be at most 100 characters')
  })

  test('a custom error on the schema wins', () => {
    expect(reasonOf(issue(ValueErrorType.Literal, { const: true, error: 'must be true' }))).toBe('must be true')
  })

  test('a union of literals lists the choices', () => {
    expect(reasonOf(issue(ValueErrorType.Union, { anyOf: [{ const: 'a' }, { const: 'b' }] }))).toBe('must be one of a, b')
  })

  test("Elysia's query coercion is reported as the real type", () => {
    const schema = { anyOf: [{ type: 'string', format: 'integer' }, { type: 'integer' }] }
    expect(reasonOf(issue(ValueErrorType.Union, schema))).toBe('must be an integer')
  })

  test('a plain type mismatch', () => {
    expect(reasonOf(issue(ValueErrorType.String, { type: 'string' }))).toBe('must be a string')
    expect(reasonOf(issue(ValueErrorType.Boolean, { type: 'boolean' }))).toBe('must be a boolean')
  })
})
