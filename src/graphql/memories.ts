/** Memories: the organization's keys, or a function's. */
import type { Auth } from '../auth/principal'
import { getFunction } from '../functions/service'
import { defaultMemoryScope, getMemory, listMemories, presentListItem, presentMemory, type MemoryScope } from '../memories/service'
import type { GqlContext } from './context'
import { allow, uuidArg } from './context'
import { CONNECTION_ARGS, connection, connectionTypes, keyedPageOf, type ConnectionArgs } from './connection'
import type { SchemaModule } from './module'

/** The function's scope (not_found unless it is a live function of the organization), else the REST default. */
async function scopeOf(g: GqlContext, auth: Auth, functionId: string | undefined): Promise<MemoryScope> {
  if (functionId === undefined) return defaultMemoryScope(g.ctx.sql, auth)
  return { orgId: auth.orgId, functionId: (await getFunction(g.ctx.sql, auth.orgId, uuidArg('functionId', functionId))).id }
}

export const memoriesModule: SchemaModule = {
  sdl: `
extend type Query {
  """
  Live memory keys in byte order, with their values (as GET /v1/memories?include_values=true).
  The organization's scope, or the function's with functionId; a function's runtime key reads
  its own function's scope by default, as on the REST API.
  """
  memories(${CONNECTION_ARGS}, functionId: ID, prefix: String): MemoryConnection
  memory(key: String!, functionId: ID): Memory
}

type Memory {
  key: String!
  value: JSON
  version: Int!
  metadata: JSON!
  expiresAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
}

${connectionTypes('Memory', 'memory keys').replace('newest first', 'in byte order of their keys')}
`,
  resolvers: {
    Query: {
      memories: async (_s, args: ConnectionArgs & { functionId?: string; prefix?: string }, g) => {
        const auth = allow(g, '/v1/memories', 'memories')
        const where = await scopeOf(g, auth, args.functionId)
        const scope = `gql:memories:${auth.orgId}:${where.functionId ?? 'org'}:${args.prefix ?? ''}`
        const page = keyedPageOf(g.ctx, scope, args)
        const result = await listMemories(g.ctx.sql, where, { prefix: args.prefix, after: page.after, limit: page.limit, withValues: true })
        return connection(
          g.ctx,
          scope,
          page,
          result,
          r => presentListItem(r, true),
          r => r.key,
        )
      },
      memory: async (_s, args: { key: string; functionId?: string }, g) => {
        const auth = allow(g, '/v1/memories/:key', 'memories')
        const where = await scopeOf(g, auth, args.functionId)
        return presentMemory(await getMemory(g.ctx.sql, where, args.key))
      },
    },
  },
}
