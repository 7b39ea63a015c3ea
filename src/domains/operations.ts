/** Custom domains as operations (src/http/operation.ts): claim, list, read, verify by DNS, delete. REST and GraphQL reads; no MCP tools. */
import { t } from 'elysia'
import { mailEvents } from '../events'
import { listOperation, operation } from '../http/operation'
import { rateLimitError, rateLimiter } from '../http/rate-limit'
import { Deleted } from '../http/schema'
import { Domain } from './model'
import { claimDomain, deleteDomain, getDomain, listDomains, presentDomain, verifyDomain } from './service'

/** Verifications per domain per minute: each one is five DNS lookups. */
export const VERIFY_PER_MINUTE = 10

const Id = { id: t.String({ format: 'uuid' }) }
const TAG = 'Domains'

export const domainOperations = [
  operation({
    name: 'claim_domain',
    method: 'POST',
    path: '/v1/domains',
    tag: TAG,
    summary: 'Claim a domain',
    description:
      'Claims the domain (status pending) and returns the DNS records to publish: a verification TXT record, MX, SPF, a DKIM key generated for the domain, and a suggested DMARC policy. ' +
      'A domain whose MX records point to another mail provider is refused with 409 mx_conflict (details.mx, details.remediation) unless confirmed is true. ' +
      'Claiming a name the organization already claimed is 409 conflict. The managed domain, IP addresses and special-use names are rejected.',
    mcp: false,
    input: t.Object({
      domain: t.String({ minLength: 1, maxLength: 253, description: 'a domain or subdomain you control, e.g. example.com or agents.example.com' }),
      confirmed: t.Optional(
        t.Boolean({
          description: 'claim even when the domain already has MX records of another mail provider (otherwise 409 mx_conflict)',
          default: false,
        }),
      ),
    }),
    output: Domain,
    status: 201,
    handle: async ({ ctx, auth }, input) => presentDomain(await claimDomain(ctx.sql, ctx, auth.orgId, input), ctx.config.SMTP_HOSTNAME),
  }),
  listOperation({
    name: 'list_domains',
    method: 'GET',
    path: '/v1/domains',
    tag: TAG,
    summary: 'List domains',
    description: 'Newest first.',
    mcp: false,
    graphql: { field: 'domains', type: 'Domain', description: 'Custom domains, newest first (as GET /v1/domains).' },
    list: {
      item: Domain,
      scope: ({ auth }) => `domains:${auth.orgId}`,
      // presented here, where the configuration is at hand (the cursor needs only the id)
      fetch: async ({ ctx, auth }, _args, page) => {
        const { rows, total } = await listDomains(ctx.sql, auth.orgId, page)
        return { rows: rows.map(row => presentDomain(row, ctx.config.SMTP_HOSTNAME)), total }
      },
      present: domain => domain,
    },
  }),
  operation({
    name: 'get_domain',
    method: 'GET',
    path: '/v1/domains/:id',
    tag: TAG,
    summary: 'Get a domain',
    description: 'With its DNS records and the results of the last verification.',
    params: Id,
    resource: 'domain',
    mcp: false,
    output: Domain,
    graphql: { field: 'domain', type: 'Domain' },
    handle: async ({ ctx, auth }, { id }) => presentDomain(await getDomain(ctx.sql, auth.orgId, id), ctx.config.SMTP_HOSTNAME),
  }),
  operation({
    name: 'verify_domain',
    method: 'POST',
    path: '/v1/domains/:id/verify',
    tag: TAG,
    summary: 'Verify a domain',
    description:
      'Looks up the records now and stores the results in checks (ok, missing, mismatch, or error when DNS failed). The domain becomes verified when the verification TXT record matches; ' +
      'MX, SPF, DKIM and DMARC are reported so you know what else to fix. Answers 200 whether or not the domain verified: read status. ' +
      `409 conflict while another organization holds the name verified. At most ${VERIFY_PER_MINUTE} per minute per domain (429 rate_limit_exceeded).`,
    params: Id,
    resource: 'domain',
    mcp: false,
    output: Domain,
    handle: async ({ ctx, auth }, { id }) => {
      const row = await getDomain(ctx.sql, auth.orgId, id)
      const decision = await rateLimiter(ctx).take(`domain-verify:${row.id}`, VERIFY_PER_MINUTE)
      if (!decision.allowed) throw rateLimitError(decision, 'rate_limit_exceeded', 'domain verification')
      const verified = await verifyDomain(ctx.sql, ctx, row)
      mailEvents(ctx).emitChange(auth.orgId)
      return presentDomain(verified, ctx.config.SMTP_HOSTNAME)
    },
  }),
  operation({
    name: 'delete_domain',
    method: 'DELETE',
    path: '/v1/domains/:id',
    tag: TAG,
    summary: 'Delete a domain',
    description: 'Removes the claim and its DKIM key; a verified name becomes free for others to verify. Mail to it is then refused.',
    params: Id,
    resource: 'domain',
    mcp: false,
    output: Deleted,
    handle: async ({ ctx, auth }, { id }) => ({ ...(await deleteDomain(ctx.sql, auth.orgId, id)), deleted: true as const }),
  }),
]
