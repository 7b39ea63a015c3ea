/** The webhook endpoint, as the API returns it, its delivery rules, and the bodies that create and change it (shared with the MCP tools). */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'

export const MAX_SENDER_LIST = 1000

const SenderList = (meaning: string) =>
  t.Array(t.String({ format: 'email', maxLength: 320, description: 'an email address' }), {
    maxItems: MAX_SENDER_LIST,
    description: `${meaning}; addresses are stored lowercased, duplicates dropped; at most ${MAX_SENDER_LIST}`,
  })

export const Rules = t.Object(
  {
    // TypeBox's integer, not Elysia's: t.Integer also accepts numeric strings, which would be stored as strings
    max_size_bytes: t.Optional(Type.Integer({ minimum: 1, description: 'largest message delivered (approximate size of the whole message)' })),
    exclude_attachments: t.Optional(t.Boolean({ description: 'true = deliver only messages without attachments' })),
    attachment_limit_mb: t.Optional(
      t.Number({ exclusiveMinimum: 0, error: 'must be a number greater than 0', description: 'largest total attachment size delivered, in MB' }),
    ),
    sender_whitelist: t.Optional(SenderList('deliver only mail from these senders')),
    sender_blacklist: t.Optional(SenderList('never deliver mail from these senders')),
    event_types: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 50,
        description:
          'the event types delivered (e.g. email.received, payment.settled, draft.pending_approval); omitted = all mail events; events that are not mail (payments, x402 interactions, drafts) only when listed. Matched exactly and not checked against known names',
      }),
    ),
  },
  { additionalProperties: false, description: 'all optional and ANDed; {} applies no filtering' },
)

const Kind = t.Union([t.Literal('http'), t.Literal('function')])
const DomainIdOrNull = (description: string) => t.Union([t.String({ format: 'uuid' }), t.Null()], { error: 'must be a domain id (uuid) or null', description })
const SLOT = 'a domain of the organization (needs the webhooks_per_domain entitlement); null = the org-wide fallback slot'

export const Endpoint = t.Object({
  id: t.String({ format: 'uuid' }),
  kind: Kind,
  url: t.String({ description: 'the receiver URL; for a function endpoint the opaque function://<function_id>' }),
  function_id: t.Union([t.String({ format: 'uuid' }), t.Null()]),
  enabled: t.Boolean(),
  domain_id: t.Union([t.String({ format: 'uuid' }), t.Null()], { description: SLOT }),
  is_route_target: t.Boolean({ description: 'reachable only through a recipient route, never as a domain default or the fallback' }),
  rules: Rules,
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const DeactivatedEndpoint = t.Composite([Endpoint, t.Object({ deactivated_at: t.String({ format: 'date-time' }) })])

export const CreateEndpoint = t.Object({
  kind: t.Optional(t.Union([t.Literal('http'), t.Literal('function')], { default: 'http', description: 'http (default) or function' })),
  url: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'required for http, forbidden for function: an https URL on a publicly reachable host (private, loopback and link-local addresses are refused)',
    }),
  ),
  function_id: t.Optional(t.String({ format: 'uuid', description: 'a function id (uuid)' })),
  enabled: t.Optional(t.Boolean({ default: true })),
  domain_id: t.Optional(DomainIdOrNull(SLOT)),
  is_route_target: t.Optional(t.Boolean({ default: false, description: 'true = only recipient routes reach it; exempt from the slot rule' })),
  rules: t.Optional(Rules),
})

export const UpdateEndpoint = t.Object({
  url: t.Optional(t.String({ minLength: 1, maxLength: 2048, description: 'http endpoints only' })),
  enabled: t.Optional(t.Boolean()),
  domain_id: t.Optional(DomainIdOrNull(SLOT)),
  rules: t.Optional(Rules),
})
