/** Templates and wakes (scheduled commands) with their runs; their Query fields are made from templates/ and wake/operations.ts. */
import { connectionTypes } from './connection'
import type { SchemaModule } from './module'

export const stateModule: SchemaModule = {
  sdl: `
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
  resolvers: {},
}
