/**
 * Every declared operation (src/http/operation.ts), in one list: app.ts serves them as REST
 * routes, the MCP server offers them as tools, the GraphQL schema has the reads as Query fields.
 * An operation lives in its feature (`<feature>/operations.ts`); add it here to have it served.
 */
import { accountOperations } from './account/operations'
import { suppressionOperations } from './bounces/operations'
import { contactOperations } from './contacts/operations'
import { domainOperations } from './domains/operations'
import { approvalPolicyOperations, draftOperations } from './drafts/operations'
import { emailOperations } from './emails/operations'
import { functionObserveOperations, functionOperations, functionSecretOperations } from './functions/operations'
import type { Operation } from './http/operation'
import { inboxOperations } from './inboxes/operations'
import { labelOperations } from './labels/operations'
import { functionMemoryOperations, orgMemoryOperations } from './memories/operations'
import { networkOperations, publishedAgentOperations } from './networks/operations'
import { noteOperations } from './notes/operations'
import { registryOperations } from './registries/operations'
import { sendingOperations } from './sending/operations'
import { templateOperations } from './templates/operations'
import { wakeOperations } from './wake/operations'
import { deliveryOperations, endpointOperations } from './webhooks/operations'
import { paymentOperations, payoutOperations } from './x402/operations'

export const OPERATIONS: readonly Operation[] = [
  ...domainOperations,
  ...inboxOperations,
  ...emailOperations,
  ...labelOperations,
  ...sendingOperations,
  ...draftOperations,
  ...approvalPolicyOperations,
  ...suppressionOperations,
  ...endpointOperations,
  ...deliveryOperations,
  ...templateOperations,
  ...wakeOperations,
  ...accountOperations,
  ...functionOperations,
  ...functionObserveOperations,
  ...functionSecretOperations,
  ...networkOperations,
  ...publishedAgentOperations,
  ...contactOperations,
  ...noteOperations,
  ...registryOperations,
  ...payoutOperations,
  ...paymentOperations,
  ...orgMemoryOperations,
  ...functionMemoryOperations,
]
