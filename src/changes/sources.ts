/**
 * The feed's record of other features' writes: one constructor per kind of change, so that a
 * writer adds a single call, `recordChanges(tx, [...])`, last in the transaction that does the
 * write (see record.ts). Mail, memory, domain and wake changes are built where they are
 * written; these are the ones whose writers live in other areas (functions, payments,
 * deliveries, sends).
 */
import type { ChangeInput } from './record'

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null)

/** `function.deployed` or `function.deploy_failed`: a deployment recorded (current when its check passed). */
export function deploymentChange(
  orgId: string,
  d: { id: string; function_id: string; status: 'deployed' | 'failed'; deploy_error: unknown; is_current: boolean },
): ChangeInput {
  return {
    orgId,
    type: d.status === 'deployed' ? 'function.deployed' : 'function.deploy_failed',
    resource: { type: 'deployment', id: d.id },
    data: { function_id: d.function_id, deployment_id: d.id, status: d.status, is_current: d.is_current, deploy_error: d.deploy_error ?? null },
  }
}

/** `function.invoked`: an invocation recorded, whatever its outcome. */
export function invocationChange(i: {
  id: string
  orgId: string
  functionId: string
  deploymentId: string
  outcome: string
  responseStatus: number | null
  deliveryId: string | null
  emailId: string | null
  cpuMs: number
  wallMs: number
}): ChangeInput {
  return {
    orgId: i.orgId,
    type: 'function.invoked',
    resource: { type: 'invocation', id: i.id },
    data: {
      invocation_id: i.id,
      function_id: i.functionId,
      deployment_id: i.deploymentId,
      outcome: i.outcome,
      response_status: i.responseStatus,
      delivery_id: i.deliveryId,
      email_id: i.emailId,
      cpu_ms: i.cpuMs,
      wall_ms: i.wallMs,
    },
  }
}

export interface PaymentFacts {
  type: 'payment.paid' | 'payment.settled' | 'payment.failed'
  challengeId: string
  network: string
  amount: string
  asset: string
  payeeOrg: string
  payerOrg: string | null
  payer: string | null
  payTo: string
  settleTx?: string
  failure?: { reason: string; category: string; reasons: string[] }
}

/**
 * A payment's step for the payee (`direction: received`) and, when the payer is an organization
 * here, for the payer (`direction: sent`): `payment.paid` (a verified payment claimed, being
 * settled), then `payment.settled` or `payment.failed`.
 */
export function paymentChanges(p: PaymentFacts): ChangeInput[] {
  const copies: [string, 'received' | 'sent'][] = [[p.payeeOrg, 'received']]
  if (p.payerOrg && p.payerOrg !== p.payeeOrg) copies.push([p.payerOrg, 'sent'])
  return copies.map(([orgId, direction]) => ({
    orgId,
    type: p.type,
    resource: { type: 'challenge', id: p.challengeId },
    data: {
      challenge_id: p.challengeId,
      direction,
      network: p.network,
      amount: p.amount,
      asset: p.asset,
      payer: p.payer,
      payer_org: p.payerOrg,
      pay_to: p.payTo,
      ...(p.settleTx !== undefined && { settle_tx: p.settleTx }),
      ...(p.failure && { failure_reason: p.failure.reason, failure_category: p.failure.category, reasons: p.failure.reasons }),
    },
  }))
}

/** `delivery.created`: a webhook delivery written (`pending`, or `skipped_by_rules` with the reason). */
export function deliveryCreated(d: {
  id: string
  orgId: string
  endpointId: string
  eventId: string
  eventType: string
  emailId: string | null
  status: string
  reason?: string | null
}): ChangeInput {
  return {
    orgId: d.orgId,
    type: 'delivery.created',
    resource: { type: 'delivery', id: d.id },
    data: { status: d.status, endpoint_id: d.endpointId, event_id: d.eventId, event_type: d.eventType, email_id: d.emailId, reason: d.reason ?? null },
  }
}

export interface SendFacts {
  id: string
  org_id: string
  status: string
  from_address: string
  request: { to: string[]; subject: string }
  scheduled_at: Date | null
  repeat_every_minutes: number | null
  repeat_stopped_at: Date | null
  repeat_stopped_by: string | null
}

/**
 * `send.created` (every new send; `status: scheduled` when it waits for `scheduled_at`),
 * `send.rescheduled` (a new time or repeat interval), `send.canceled` (a scheduled send
 * canceled, or a repeat stopped by its sender or a recipient). The relay's outcomes are
 * `send.status_changed`.
 */
export function sendChange(type: 'send.created' | 'send.rescheduled' | 'send.canceled', s: SendFacts): ChangeInput {
  return {
    orgId: s.org_id,
    type,
    resource: { type: 'send', id: s.id },
    addresses: [s.from_address],
    data: {
      send_id: s.id,
      status: s.status,
      from: s.from_address,
      to: s.request.to,
      subject: s.request.subject,
      scheduled_at: iso(s.scheduled_at),
      repeat_every_minutes: s.repeat_every_minutes,
      repeat_stopped_at: iso(s.repeat_stopped_at),
      repeat_stopped_by: s.repeat_stopped_by,
    },
  }
}
