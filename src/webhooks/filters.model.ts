/** The sender filter, as the API returns it. */
import { t } from 'elysia'

export const PATTERN =
  'matched against the sender address, case-insensitively: user@example.com (that address), @example.com (any address at example.com, not its subdomains), ' +
  '* for any run of characters (*@example.com, billing-*@*, *@*.example.com); stored trimmed and lowercased; at most 500 characters'

export const FilterType = t.Union([t.Literal('whitelist'), t.Literal('blocklist')], {
  description: 'whitelist: deliver only mail from matching senders; blocklist: never deliver mail from matching senders',
})

export const Filter = t.Object({
  id: t.String({ format: 'uuid' }),
  type: FilterType,
  pattern: t.String({ description: PATTERN }),
  domain_id: t.Union([t.String({ format: 'uuid' }), t.Null()], { description: 'the domain the filter applies to; null = every address of the organization' }),
  enabled: t.Boolean(),
  created_at: t.String({ format: 'date-time' }),
})
