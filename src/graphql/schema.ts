/**
 * The schema: SDL per part (account, mail, webhooks, functions, memories, payments, networks
 * with contacts and address notes, registries, templates and wakes), with the
 * resolvers attached to the built schema. Sources are the REST representations that the
 * services present, so a field without a resolver reads the property of its snake_case name
 * (`receivedAt` reads `received_at`): one representation for both surfaces.
 */
import { assertValidSchema, buildSchema, type GraphQLFieldResolver, type GraphQLSchema, isObjectType } from 'graphql'
import { PAGE_INFO } from './connection'
import { accountModule } from './account'
import { mailModule } from './mail'
import { draftsModule } from './drafts'
import { webhooksModule } from './webhooks'
import { functionsModule } from './functions'
import { memoriesModule } from './memories'
import { paymentsModule } from './payments'
import { networksModule } from './networks'
import { registriesModule } from './registries'
import { stateModule } from './state'
import type { SchemaModule } from './module'
import { OPERATIONS } from '../operations'
import { operationFields } from './operation-fields'

/** The version of the GraphQL surface (Versioning rule 6): changes inside it are additive. */
export const API_VERSION = 'v1'

const MODULES: SchemaModule[] = [
  operationFields(OPERATIONS),
  accountModule,
  mailModule,
  draftsModule,
  webhooksModule,
  functionsModule,
  memoriesModule,
  paymentsModule,
  networksModule,
  registriesModule,
  stateModule,
]

const BASE = `
"""
The agent mail service, read-only. apiVersion ${API_VERSION}: changes inside a version are
additive; a field slated for removal is marked @deprecated with its removal date.
"""
schema { query: Query }

type Query {
  "The version of this GraphQL surface: ${API_VERSION}. Readable without a credential."
  apiVersion: String!
}

"An instant, ISO 8601 in UTC (2026-11-25T16:00:00.000Z)."
scalar DateTime

"Any JSON value, as the REST API returns it."
scalar JSON

${PAGE_INFO}
`

const snakeCache = new Map<string, string>()
const snake = (name: string) => {
  let s = snakeCache.get(name)
  if (s === undefined) snakeCache.set(name, (s = name.replace(/[A-Z]/g, c => `_${c.toLowerCase()}`)))
  return s
}

/** The default field resolver: the property of the field's name, else of its snake_case name. */
export const fieldResolver: GraphQLFieldResolver<unknown, unknown> = (source, _args, _g, info) => {
  if (source === null || typeof source !== 'object') return undefined
  const s = source as Record<string, unknown>
  return info.fieldName in s ? s[info.fieldName] : s[snake(info.fieldName)]
}

function build(): GraphQLSchema {
  const schema = buildSchema([BASE, ...MODULES.map(m => m.sdl)].join('\n'))
  // DateTime and JSON stay as buildSchema makes custom scalars: values pass through as they are
  // (arguments of type DateTime are checked by parseTimestamp, naming the argument)
  const query = schema.getQueryType()!
  query.getFields().apiVersion!.resolve = () => API_VERSION
  for (const m of MODULES) {
    for (const [typeName, fields] of Object.entries(m.resolvers)) {
      const type = schema.getType(typeName)
      if (!isObjectType(type)) throw new Error(`graphql: no object type ${typeName} for its resolvers`)
      for (const [field, resolve] of Object.entries(fields)) {
        const def = type.getFields()[field]
        if (!def) throw new Error(`graphql: ${typeName}.${field} has a resolver but no field`)
        def.resolve = resolve as GraphQLFieldResolver<unknown, unknown>
      }
    }
  }
  assertValidSchema(schema)
  return schema
}

/** Built once, on first use. */
let built: GraphQLSchema | undefined
export const graphqlSchema = () => (built ??= build())
