/** The recipient route, as the API returns it. */
import { t } from 'elysia'

export const PATTERN =
  'the recipient address or pattern: user@example.com (that address), @example.com (any address at example.com), * for any run of characters (support-*@example.com); ' +
  'stored trimmed and lowercased; at most 500 characters; unique per organization'

export const Route = t.Object({
  id: t.String({ format: 'uuid' }),
  pattern: t.String({ description: PATTERN }),
  endpoint_id: t.String({ format: 'uuid', description: 'the route-target endpoint that receives the mail' }),
  created_at: t.String({ format: 'date-time' }),
})
