/**
 * The schema as a client sees it: anonymous introspection over GET and POST, checked with
 * graphql-js's own utilities (buildClientSchema, validateSchema, printSchema), and the
 * deprecation rule of Versioning rule 6: a removal date on every deprecated field.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { buildClientSchema, getIntrospectionQuery, isObjectType, printSchema, validateSchema, type IntrospectionQuery } from 'graphql'
import { testApp, type TestApp } from '../helpers/app'
import { graphqlSchema } from '../../src/graphql/schema'
import { gql } from './helpers'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})

describe('introspection', () => {
  test('anonymous POST: a valid schema, the one the service runs, queries only', async () => {
    const res = await gql(
      t,
      getIntrospectionQuery({ descriptions: true, schemaDescription: true, inputValueDeprecation: true, directiveIsRepeatable: true, specifiedByUrl: true }),
    )
    expect(res.status).toBe(200)
    expect(res.body.errors).toBeUndefined()
    const client = buildClientSchema(res.body.data as IntrospectionQuery)
    expect(validateSchema(client)).toEqual([])
    expect(printSchema(client)).toBe(printSchema(graphqlSchema()))
    expect(client.getMutationType()).toBeNull()
    expect(client.getSubscriptionType()).toBeNull()
    const types = Object.keys(client.getTypeMap())
    for (const name of [
      'Account',
      'Storage',
      'Domain',
      'Inbox',
      'Email',
      'Thread',
      'SentEmail',
      'Endpoint',
      'Delivery',
      'Function',
      'Invocation',
      'Memory',
      'Payment',
      'PaymentChallenge',
      'Network',
      'NetworkMember',
      'DiscoveredAgent',
      'PublishedAgent',
      'Contact',
      'AddressNote',
      'Registry',
      'RegistryAgent',
      'Template',
      'Wake',
      'WakeRun',
      'PageInfo',
    ]) {
      expect(types).toContain(name)
    }
    // every list is a Relay connection: edges with cursor and node, pageInfo
    const query = client.getQueryType()!.getFields()
    for (const name of [
      'domains',
      'inboxes',
      'emails',
      'threads',
      'sentEmails',
      'endpoints',
      'deliveries',
      'functions',
      'memories',
      'payments',
      'networks',
      'networkMembers',
      'networkAgents',
      'contacts',
      'addressNotes',
      'registryAgents',
      'templates',
      'wakes',
      'wakeRuns',
    ]) {
      const type = client.getType(String(query[name]!.type))
      expect(isObjectType(type) && Object.keys(type.getFields()).sort()).toEqual(['edges', 'nodes', 'pageInfo', 'totalCount'])
      expect(query[name]!.args.map(a => a.name)).toEqual(expect.arrayContaining(['first', 'after']))
    }
  })

  test('anonymous GET works the same, and apiVersion is v1', async () => {
    const res = await gql(t, '{ apiVersion __schema { queryType { name } } }', { method: 'GET' })
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual({ apiVersion: 'v1', __schema: { queryType: { name: 'Query' } } })
    expect(res.headers.get('content-type')).toStartWith('application/json')
    const typed = await t.request('GET', `/graphql?query=${encodeURIComponent('{ apiVersion }')}`, { headers: { accept: 'application/graphql-response+json' } })
    expect(typed.headers.get('content-type')).toStartWith('application/graphql-response+json')
  })

  test('every deprecated field names its replacement and a removal date at least six months after this version of the schema', async () => {
    const schema = graphqlSchema()
    const deprecated = Object.values(schema.getTypeMap())
      .filter(isObjectType)
      .flatMap(type =>
        Object.values(type.getFields())
          .filter(f => f.deprecationReason)
          .map(f => ({ field: `${type.name}.${f.name}`, reason: f.deprecationReason! })),
      )
    expect(deprecated.map(d => d.field)).toContain('Storage.quotaMb')
    for (const { field, reason } of deprecated) {
      const date = /Removal date: (\d{4}-\d{2}-\d{2})/.exec(reason)?.[1]
      expect(date, `${field}: ${reason}`).toBeDefined()
      expect(reason, field).toMatch(/^Use \w+/)
      expect(new Date(`${date}T00:00:00Z`).getTime()).toBeGreaterThanOrEqual(new Date('2026-11-25T00:00:00Z').getTime() + 182 * 86_400_000)
    }
  })
})
