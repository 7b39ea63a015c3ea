/**
 * Bounces, complaints and the suppression list: what a send's recipients became after the relay
 * took them, and the addresses an organization no longer sends to.
 */
import { t } from 'elysia'
import { Address, Nullable, OneOf } from '../http/schema'

export const SUPPRESSION_REASONS = ['hard_bounce', 'complaint', 'manual'] as const
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number]

export const Suppression = t.Object({
  id: t.String({ format: 'uuid' }),
  address: t.String({ description: 'lowercased' }),
  reason: OneOf(SUPPRESSION_REASONS, { description: 'hard_bounce and complaint are added by the service; manual by POST /v1/suppressions' }),
  detail: Nullable(t.String({ description: "the bounce's diagnostic code, the complaint's feedback type, or the note given by hand" })),
  send_id: Nullable(t.String({ format: 'uuid', description: 'the send that bounced or was complained about' })),
  created_at: t.String({ format: 'date-time' }),
})

export const CreateSuppression = t.Object(
  {
    address: t.String({ ...Address, description: 'the address to stop sending to' }),
    detail: t.Optional(t.String({ minLength: 1, maxLength: 500, pattern: '^[^\\r\\n]*$', description: 'why, for the people reading the list (one line)' })),
  },
  { additionalProperties: false },
)

/** What a recipient of a send became: pending (not relayed yet), accepted or rejected by the relay, then bounced or complained. */
export const RECIPIENT_STATES = ['pending', 'accepted', 'rejected', 'bounced', 'complained'] as const
export const BOUNCE_TYPES = ['hard', 'soft'] as const
export type BounceType = (typeof BOUNCE_TYPES)[number]

export const SendRecipient = t.Object({
  address: t.String(),
  status: OneOf(RECIPIENT_STATES),
  bounce_type: Nullable(OneOf(BOUNCE_TYPES), { description: 'bounced: hard (a 5.x.x status, permanent) or soft (4.x.x, transient)' }),
  status_code: Nullable(t.String({ description: 'the RFC 3463 status of the bounce, e.g. 5.1.1' })),
  diagnostic_code: Nullable(t.String({ description: "the remote server's words, e.g. `smtp; 550 5.1.1 <x@example.com>: user unknown`" })),
  feedback_type: Nullable(t.String({ description: "complained: the abuse report's Feedback-Type (abuse, fraud, virus, other)" })),
  reported_at: Nullable(t.String({ format: 'date-time', description: 'when the bounce or complaint came in' })),
})

/** A bounce or a complaint as kept on the send, by recipient (`sends.recipient_reports`). */
export interface RecipientReport {
  status: 'bounced' | 'complained'
  bounce_type: BounceType | null
  status_code: string | null
  diagnostic_code: string | null
  feedback_type: string | null
  /** dsn: a delivery status notification came back; relay: the relay refused it at delivery; arf: an abuse report */
  source: 'dsn' | 'relay' | 'arf'
  /** the sent message it is about */
  email_id: string | null
  /** the report as stored (null for a relay's refusal) */
  report_email_id: string | null
  reported_at: string
}

/** The recipients of a send with what became of each (the `recipients` of a sent email). */
export function sendRecipients(s: {
  request: { to: string[]; cc?: string[]; bcc?: string[] }
  accepted: string[]
  rejected: string[]
  recipient_reports: Record<string, RecipientReport>
}) {
  const accepted = new Set(s.accepted.map(a => a.toLowerCase()))
  const rejected = new Set(s.rejected.map(a => a.toLowerCase()))
  const seen = new Set<string>()
  return [...s.request.to, ...(s.request.cc ?? []), ...(s.request.bcc ?? [])].flatMap(address => {
    const key = address.toLowerCase()
    if (seen.has(key)) return []
    seen.add(key)
    const r = s.recipient_reports[key]
    const status = r ? r.status : rejected.has(key) ? 'rejected' : accepted.has(key) ? 'accepted' : 'pending'
    return [
      {
        address,
        status: status as (typeof RECIPIENT_STATES)[number],
        bounce_type: r?.bounce_type ?? null,
        status_code: r?.status_code ?? null,
        diagnostic_code: r?.diagnostic_code ?? null,
        feedback_type: r?.feedback_type ?? null,
        reported_at: r?.reported_at ?? null,
      },
    ]
  })
}
