/**
 * Every declared operation (src/http/operation.ts), in one list: app.ts serves them as REST
 * routes, the MCP server offers them as tools, the GraphQL schema has the reads as Query fields.
 * An operation lives in its feature (`<feature>/operations.ts`); add it here to have it served.
 */
import { domainOperations } from './domains/operations'
import type { Operation } from './http/operation'
import { emailOperations } from './emails/operations'
import { inboxOperations } from './inboxes/operations'
import { sendingOperations } from './sending/operations'
import { deliveryOperations, endpointOperations } from './webhooks/operations'

export const OPERATIONS: readonly Operation[] = [
  ...domainOperations,
  ...inboxOperations,
  ...emailOperations,
  ...sendingOperations,
  ...endpointOperations,
  ...deliveryOperations,
]
