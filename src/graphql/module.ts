/** A part of the schema: its SDL (extending `Query`) and the resolvers of its fields. */
import type { GraphQLResolveInfo } from 'graphql'
import type { GqlContext } from './context'

// sources are the REST representations the services present (snake_case; see schema.ts)
// biome-ignore lint/suspicious/noExplicitAny: graphql-js hands each field its parent and arguments untyped
export type Resolver = (source: any, args: any, g: GqlContext, info: GraphQLResolveInfo) => unknown

export interface SchemaModule {
  sdl: string
  resolvers: Record<string, Record<string, Resolver>>
}
