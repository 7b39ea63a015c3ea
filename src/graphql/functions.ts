/** Functions and their invocations (the Query fields functions, function and invocation are made from functions/operations.ts). */
import { presentInvocation } from '../functions/observe'
import { allow } from './context'
import { CONNECTION_ARGS, childConnection, connectionTypes, type ConnectionArgs } from './connection'
import { deliveryById, emailById, endpointById, functionById } from './related'
import type { SchemaModule } from './module'

export const functionsModule: SchemaModule = {
  sdl: `
type FunctionRoute {
  domainId: ID
  enabled: Boolean!
  isRouteTarget: Boolean!
}

type Function {
  id: ID!
  name: String!
  "deployed, or failed (no deployment ever succeeded)"
  deployStatus: String!
  currentDeploymentId: ID
  tags: [String!]!
  endpointId: ID
  route: FunctionRoute
  createdAt: DateTime!
  updatedAt: DateTime!
  "the function's endpoint (mail reaches it through its routes)"
  endpoint: Endpoint
  "its invocations, newest first"
  invocations(${CONNECTION_ARGS}): InvocationConnection!
}

type InvocationLog {
  id: ID!
  level: String!
  message: String!
  loggedAt: DateTime!
}

type Invocation {
  id: ID!
  functionId: ID!
  deploymentId: ID!
  deliveryId: ID
  emailId: ID
  outcome: String!
  cpuMs: Float!
  wallMs: Float!
  requestMethod: String!
  requestUrl: String!
  responseStatus: Int
  exceptionName: String
  exceptionMessage: String
  logsTruncated: Boolean!
  subrequests: Int!
  createdAt: DateTime!
  "only on invocation(functionId, id)"
  exceptionStack: String
  "only on invocation(functionId, id); null in lists"
  logs: [InvocationLog!]
  function: Function
  "the message it handled, if any"
  email: Email
  "the delivery that invoked it, if any"
  delivery: Delivery
}

${connectionTypes('Function', 'functions')}
${connectionTypes('Invocation', 'invocations')}
`,
  resolvers: {
    Function: {
      endpoint: (f: { endpoint_id: string | null }, _a, g) => endpointById(g, f.endpoint_id),
      invocations: async (f: { id: string }, args: ConnectionArgs, g) => {
        allow(g, '/v1/functions/:id/invocations', 'function invocations')
        return childConnection(g.ctx, `gql:function-invocations:${f.id}`, args, g.loaders.functionInvocations, f.id, presentInvocation)
      },
    },
    Invocation: {
      function: (i: { function_id: string }, _a, g) => functionById(g, i.function_id),
      email: (i: { email_id: string | null }, _a, g) => emailById(g, i.email_id),
      delivery: (i: { delivery_id: string | null }, _a, g) => deliveryById(g, i.delivery_id),
    },
  },
}
