/**
 * What every feature plugs into the core's seams, in one place (as src/job-kinds.ts lists the
 * job kinds): the core calls these without naming a feature. Each seam is typed where the core
 * declares it (`Plugins` in src/context.ts says which module calls it).
 */
import { resolveCredential } from './auth/credentials'
import { findConnectionKey } from './connections/queries'
import { bounceReports } from './bounces/received'
import { contactCountsCte } from './contacts/counters'
import { pruneExpiredSessions } from './console/queries'
import type { Plugins } from './context'
import { holdSend } from './drafts/service'
import { invokeForDelivery } from './functions/delivery'
import { memoryFunctions } from './functions/queries'
import { agentActivityCte } from './networks/activity'
import { webhookDeliveries } from './webhooks/selection'
import { inboundSteps } from './x402/email/step-mail'

export const PLUGINS: Plugins = {
  resolveCredential,
  findConnectionKey,
  storeExtensions: [contactCountsCte, agentActivityCte],
  // in this order: a report is matched to its send before the webhooks build its event (which
  // then carries the send), and a message's webhook deliveries are created before its x402 step's job
  receivedMail: [bounceReports, webhookDeliveries, inboundSteps],
  deliverToFunction: invokeForDelivery,
  memoryFunctions,
  holdSend,
  expiredRows: { console_sessions: pruneExpiredSessions },
}
