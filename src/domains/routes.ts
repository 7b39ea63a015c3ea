/** Custom domains: claim, list, read, verify by DNS, delete. */
import { mailEvents } from '../events'
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { rateLimitError, rateLimiter } from '../http/rate-limit'
import { Domain } from './model'
import { claimDomain, deleteDomain, getDomain, listDomains, presentDomain, verifyDomain, type DomainRow } from './service'
import { IdParams, Deleted } from '../http/schema'

/** Verifications per domain per minute: each one is five DNS lookups. */
export const VERIFY_PER_MINUTE = 10

export function domainRoutes(ctx: AppContext) {
  const present = (row: DomainRow) => presentDomain(row, ctx.config.SMTP_HOSTNAME)
  return new Elysia({ prefix: '/v1/domains', tags: ['Domains'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        const row = await claimDomain(ctx.sql, ctx, auth.orgId, body)
        set.status = 201
        return present(row)
      },
      {
        body: t.Object({
          domain: t.String({ minLength: 1, maxLength: 253, description: 'a domain or subdomain you control, e.g. example.com or agents.example.com' }),
          confirmed: t.Optional(
            t.Boolean({
              description: 'claim even when the domain already has MX records of another mail provider (otherwise 409 mx_conflict)',
              default: false,
            }),
          ),
        }),
        response: { 201: Ok(Domain) },
        detail: {
          summary: 'Claim a domain',
          description:
            'Claims the domain (status pending) and returns the DNS records to publish: a verification TXT record, MX, SPF, a DKIM key generated for the domain, and a suggested DMARC policy. ' +
            'A domain whose MX records point to another mail provider is refused with 409 mx_conflict (details.mx, details.remediation) unless confirmed is true. ' +
            'Claiming a name the organization already claimed is 409 conflict. The managed domain, IP addresses and special-use names are rejected.',
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `domains:${auth.orgId}`
        return cursors(ctx).read(scope, query, page => listDomains(ctx.sql, auth.orgId, page), present)
      },
      {
        query: t.Object(pageQuery()),
        response: { 200: Paged(Domain) },
        detail: { summary: 'List domains', description: 'Newest first.' },
      },
    )
    .get('/:id', async ({ auth, params }) => present(await getDomain(ctx.sql, auth.orgId, params.id)), {
      params: IdParams,
      response: { 200: Ok(Domain) },
      detail: { summary: 'Get a domain', description: 'With its DNS records and the results of the last verification.' },
    })
    .post(
      '/:id/verify',
      async ({ auth, params }) => {
        const row = await getDomain(ctx.sql, auth.orgId, params.id)
        const decision = await rateLimiter(ctx).take(`domain-verify:${row.id}`, VERIFY_PER_MINUTE)
        if (!decision.allowed) throw rateLimitError(decision, 'rate_limit_exceeded', 'domain verification')
        const verified = await verifyDomain(ctx.sql, ctx, row)
        mailEvents(ctx).emitChange(auth.orgId)
        return present(verified)
      },
      {
        params: IdParams,
        response: { 200: Ok(Domain) },
        detail: {
          summary: 'Verify a domain',
          description:
            'Looks up the records now and stores the results in checks (ok, missing, mismatch, or error when DNS failed). The domain becomes verified when the verification TXT record matches; ' +
            'MX, SPF, DKIM and DMARC are reported so you know what else to fix. Answers 200 whether or not the domain verified: read status. ' +
            `409 conflict while another organization holds the name verified. At most ${VERIFY_PER_MINUTE} per minute per domain (429 rate_limit_exceeded).`,
        },
      },
    )
    .delete('/:id', async ({ auth, params }) => ({ ...(await deleteDomain(ctx.sql, auth.orgId, params.id)), deleted: true as const }), {
      params: IdParams,
      response: { 200: Ok(Deleted) },
      detail: {
        summary: 'Delete a domain',
        description: 'Removes the claim and its DKIM key; a verified name becomes free for others to verify. Mail to it is then refused.',
      },
    })
}
