/** Memories: the organization's keys, or a function's. The Query fields memories and memory come from memories/operations.ts. */
import { connectionTypes } from './connection'
import type { SchemaModule } from './module'

export const memoriesModule: SchemaModule = {
  sdl: `
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
  resolvers: {},
}
