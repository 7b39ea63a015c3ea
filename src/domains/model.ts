/** The domain, as the API returns it, with its DNS records and checks. */
import { t } from 'elysia'

const Purpose = t.Union([t.Literal('verification'), t.Literal('mx'), t.Literal('spf'), t.Literal('dkim'), t.Literal('dmarc')], {
  description:
    'verification proves control of the domain (required to verify); mx receives mail; spf and dkim let receivers accept mail we send for you; dmarc is a suggested report-only policy',
})
const CheckStatus = t.Union([t.Literal('ok'), t.Literal('missing'), t.Literal('mismatch'), t.Literal('error')], {
  description: 'missing: no such record; mismatch: records exist but not the expected one; error: the DNS lookup failed, try again',
})

export const DnsRecord = t.Object({
  type: t.Union([t.Literal('MX'), t.Literal('TXT')]),
  name: t.String({ description: 'fully qualified name of the record' }),
  value: t.String({
    description: 'for MX the mail host; a TXT value longer than 255 characters is published as several strings, which most DNS providers do by themselves',
  }),
  priority: t.Union([t.Integer(), t.Null()], { description: 'MX preference; null for TXT' }),
  purpose: Purpose,
  status: t.Union([CheckStatus, t.Literal('unchecked')], { description: 'the result of the last verification; unchecked before the first' }),
})

const Check = t.Object({
  status: CheckStatus,
  found: t.Array(t.String(), { description: 'what DNS answered at the name: TXT values, or MX as "<priority> <host>"' }),
  message: t.String({ description: 'what is wrong and how to fix it' }),
})

export const Domain = t.Object({
  id: t.String({ format: 'uuid' }),
  domain: t.String({ description: 'lowercase; internationalized names in punycode' }),
  status: t.Union([t.Literal('pending'), t.Literal('verified')]),
  created_at: t.String({ format: 'date-time' }),
  verified_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  last_checked_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  dns_records: t.Array(DnsRecord, { description: 'the records to publish' }),
  checks: t.Union([t.Object({ verification: Check, mx: Check, spf: Check, dkim: Check, dmarc: Check }), t.Null()], {
    description: 'per-record results of the last verification; null before the first',
  }),
})
