/** What the changes feed's routes accept and answer, kept apart from them so that a process without the API (roles.ts) and the event stream can read it. */
import { t } from 'elysia'

/** The longest `wait` of `GET /v1/changes`, in seconds. */
export const MAX_CHANGES_WAIT_SECONDS = 30

/** Without LISTEN (the embedded database), waits for changes read again this often: not every writer signals in-process. */
export const UNSIGNALLED_REREAD_MS = 500

/** One change, as the feed and the event stream present it. */
export const Change = t.Object({
  id: t.String({ description: 'evt_<32 hex>; a mail event has the id of its webhook event, so clients can dedupe across both' }),
  seq: t.Integer({ description: "position in the organization's total order; increases by one per change" }),
  type: t.String({
    description:
      'email.received (and the machine-mail types), email.sent, send.created, send.rescheduled, send.canceled, send.status_changed, send.bounced, send.complained, ' +
      'suppression.created, suppression.deleted, delivery.created, delivery.status_changed, ' +
      'domain.verified, domain.verification_failed, memory.set, memory.deleted, memory.expired, function.deployed, function.deploy_failed, function.invoked, ' +
      'payment.paid, payment.settled, payment.failed, wake.run_delivered, wake.run_failed, wake.command, draft.pending_approval, draft.approved, draft.rejected, email.labels_changed, label.created, label.deleted (see docs/agent-state.md)',
  }),
  occurred_at: t.String({ format: 'date-time' }),
  resource: t.Object({
    type: t.String({ description: 'email, send, suppression, delivery, domain, memory, deployment, invocation, challenge, wake_run, draft, label' }),
    id: t.String(),
  }),
  data: t.Record(t.String(), t.Unknown(), { description: 'a summary of the change; read the resource for the rest' }),
})
