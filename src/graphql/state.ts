/** Templates and wakes (scheduled commands) with their runs. */
import { getWake, listRuns, listWakes, presentRun, presentWake } from '../wake/service'
import { allow, uuidArg } from './context'
import { CONNECTION_ARGS, connection, connectionTypes, pageOf, type ConnectionArgs } from './connection'
import type { SchemaModule } from './module'

export const stateModule: SchemaModule = {
  sdl: `
extend type Query {
  "Wakes, newest first (as GET /v1/wake); the filters combine."
  wakes(${CONNECTION_ARGS}, enabled: Boolean, targetType: String): WakeConnection
  "A wake's runs, newest first (as GET /v1/wake/{id}/runs)."
  wakeRuns(wakeId: ID!, ${CONNECTION_ARGS}): WakeRunConnection
}

type Template {
  id: ID!
  name: String!
  alias: String
  subject: String!
  bodyText: String!
  bodyHtml: String
  "the declared variables: name, required, ..."
  variables: JSON!
  createdAt: DateTime!
  updatedAt: DateTime!
}

type WakeTarget {
  "function, endpoint or agent_connection"
  type: String!
  id: ID!
}

type WakeSchedule {
  "at, cron or every"
  type: String!
  at: DateTime
  cron: String
  timeZone: String
  everyMinutes: Int
}

type WakeCommand {
  name: String!
  payload: JSON
}

type Wake {
  id: ID!
  target: WakeTarget!
  schedule: WakeSchedule!
  command: WakeCommand!
  dedupeKey: String
  enabled: Boolean!
  nextRunAt: DateTime
  lastRunAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
}

type WakeRun {
  runId: ID!
  wakeId: ID!
  scheduledFor: DateTime!
  "fired after downtime, for slots missed"
  late: Boolean!
  "run now, not by the schedule"
  manual: Boolean!
  "pending, delivered or failed"
  status: String!
  attempts: Int!
  responseStatus: Int
  lastError: String
  createdAt: DateTime!
  finishedAt: DateTime
}

${connectionTypes('Template', 'templates')}
${connectionTypes('Wake', 'wakes')}
${connectionTypes('WakeRun', 'wake runs')}
`,
  resolvers: {
    Query: {
      wakes: async (_s, args: ConnectionArgs & { enabled?: boolean; targetType?: string }, g) => {
        const auth = allow(g, '/v1/wake', 'wakes')
        const scope = `gql:wakes?${JSON.stringify([args.enabled ?? null, args.targetType ?? null])}`
        const page = pageOf(g.ctx, scope, args)
        return connection(
          g.ctx,
          scope,
          page,
          await listWakes(g.ctx.sql, auth.orgId, page, { enabled: args.enabled ?? undefined, target_type: args.targetType ?? undefined }),
          presentWake,
        )
      },
      wakeRuns: async (_s, args: ConnectionArgs & { wakeId: string }, g) => {
        const auth = allow(g, '/v1/wake/:id/runs', 'wakes')
        const wake = await getWake(g.ctx.sql, auth.orgId, uuidArg('wakeId', args.wakeId))
        const scope = `gql:wake-runs:${wake.id}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await listRuns(g.ctx.sql, auth.orgId, wake.id, page), presentRun)
      },
    },
  },
}
