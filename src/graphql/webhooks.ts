/** Webhook endpoints and their deliveries. */
import { getDelivery, listDeliveries, presentDelivery } from '../webhooks/deliveries.service'
import { getEndpoint, listEndpoints, presentEndpoint } from '../webhooks/endpoints.service'
import { parseTimestamp } from '../http/timestamps'
import { allow, uuidArg } from './context'
import { emailById, endpointById, functionById } from './related'
import { CONNECTION_ARGS, connection, connectionTypes, pageOf, type ConnectionArgs } from './connection'
import type { SchemaModule } from './module'

export const webhooksModule: SchemaModule = {
  sdl: `
extend type Query {
  "Active webhook endpoints, newest first (as GET /v1/endpoints)."
  endpoints(${CONNECTION_ARGS}): EndpointConnection
  endpoint(id: ID!): Endpoint
  "Deliveries of events to endpoints, newest first (as GET /v1/webhooks/deliveries); the filters combine."
  deliveries(${CONNECTION_ARGS}, emailId: ID, status: DeliveryStatus, dateFrom: DateTime, dateTo: DateTime): DeliveryConnection
  delivery(id: ID!): Delivery
}

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
    Query: {
      endpoints: async (_s, args: ConnectionArgs, g) => {
        const auth = allow(g, '/v1/endpoints', 'webhook endpoints')
        const page = pageOf(g.ctx, 'gql:endpoints', args)
        return connection(g.ctx, 'gql:endpoints', page, await listEndpoints(g.ctx.sql, auth.orgId, page), presentEndpoint)
      },
      endpoint: async (_s, args: { id: string }, g) =>
        presentEndpoint(await getEndpoint(g.ctx.sql, allow(g, '/v1/endpoints/:id', 'webhook endpoints').orgId, uuidArg('id', args.id))),
      deliveries: async (_s, args: ConnectionArgs & { emailId?: string; status?: string; dateFrom?: string; dateTo?: string }, g) => {
        const auth = allow(g, '/v1/webhooks/deliveries', 'webhook deliveries')
        const filters = {
          emailId: args.emailId ? uuidArg('emailId', args.emailId) : undefined,
          status: args.status as never,
          dateFrom: args.dateFrom ? parseTimestamp('dateFrom', args.dateFrom) : null,
          dateTo: args.dateTo ? parseTimestamp('dateTo', args.dateTo) : null,
        }
        const scope = `gql:deliveries?${JSON.stringify([filters.emailId ?? null, args.status ?? null, args.dateFrom ?? null, args.dateTo ?? null])}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await listDeliveries(g.ctx.sql, auth.orgId, page, filters), presentDelivery)
      },
      delivery: async (_s, args: { id: string }, g) =>
        presentDelivery(await getDelivery(g.ctx.sql, allow(g, '/v1/webhooks/deliveries/:id', 'webhook deliveries').orgId, uuidArg('id', args.id))),
    },
    Endpoint: {
      function: (e: { function_id: string | null }, _a, g) => functionById(g, e.function_id),
      deliveries: async (e: { id: string }, args: ConnectionArgs, g) => {
        allow(g, '/v1/webhooks/deliveries', 'webhook deliveries')
        const scope = `gql:endpoint-deliveries:${e.id}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await g.loaders.endpointDeliveries.load({ parent: e.id, page }), presentDelivery)
      },
    },
    Delivery: {
      emailSummary: (d: { email: unknown }) => d.email,
      endpoint: (d: { endpoint_id: string }, _a, g) => endpointById(g, d.endpoint_id),
      email: (d: { email_id: string | null }, _a, g) => emailById(g, d.email_id),
    },
  },
}
