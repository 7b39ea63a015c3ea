/** Webhook endpoints and their deliveries. */
import { presentDelivery } from '../webhooks/deliveries.service'
import { allow } from './context'
import { emailById, endpointById, functionById } from './related'
import { CONNECTION_ARGS, childConnection, connectionTypes, type ConnectionArgs } from './connection'
import type { SchemaModule } from './module'

export const webhooksModule: SchemaModule = {
  sdl: `
type Endpoint {
  id: ID!
  "http, or function (internal dispatch)"
  kind: String!
  "the receiver's URL, or function://<id>"
  url: String!
  functionId: ID
  enabled: Boolean!
  domainId: ID
  isRouteTarget: Boolean!
  rules: JSON!
  createdAt: DateTime!
  updatedAt: DateTime!
  "the function a function endpoint dispatches to"
  function: Function
  "its deliveries, newest first"
  deliveries(${CONNECTION_ARGS}): DeliveryConnection!
}

enum DeliveryStatus { pending delivered header_confirmed failed skipped_by_rules }

type DeliveryEmail {
  sender: String
  recipient: String
  subject: String
}

type Delivery {
  id: ID!
  emailId: ID
  endpointId: ID!
  endpointUrl: String!
  "identical across retries"
  eventId: String!
  eventType: String!
  status: DeliveryStatus!
  attemptCount: Int!
  durationMs: Int
  responseStatus: Int
  lastError: String
  lastErrorCode: String
  createdAt: DateTime!
  updatedAt: DateTime!
  "a summary of the message the event is about"
  emailSummary: DeliveryEmail!
  "the endpoint, while it is active"
  endpoint: Endpoint
  "the message the event is about"
  email: Email
}

${connectionTypes('Endpoint', 'webhook endpoints')}
${connectionTypes('Delivery', 'deliveries')}
`,
  resolvers: {
    Endpoint: {
      function: (e: { function_id: string | null }, _a, g) => functionById(g, e.function_id),
      deliveries: async (e: { id: string }, args: ConnectionArgs, g) => {
        allow(g, '/v1/webhooks/deliveries', 'webhook deliveries')
        return childConnection(g.ctx, `gql:endpoint-deliveries:${e.id}`, args, g.loaders.endpointDeliveries, e.id, presentDelivery)
      },
    },
    Delivery: {
      emailSummary: (d: { email: unknown }) => d.email,
      endpoint: (d: { endpoint_id: string }, _a, g) => endpointById(g, d.endpoint_id),
      email: (d: { email_id: string | null }, _a, g) => emailById(g, d.email_id),
    },
  },
}
