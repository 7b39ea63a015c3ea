/** Zero-touch agent accounts: one public call returns an API key and a managed inbox. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { createApiKey } from '../auth/api-keys'
import { insertOrg } from '../account/org-queries'
import { clientScope, publicAccess } from '../http/auth'
import { Ok } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import { createManagedInbox, presentInbox } from '../inboxes/service'
import { AgentAccount } from './model'

export function agentAccountRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/agent', tags: ['Agent signup'] }).use(publicAccess(ctx)).post(
    '/accounts',
    async ({ body, headers, set, request, server }) => {
      set.headers['cache-control'] = 'no-store'
      const key = idempotencyKeyOf(headers)
      const scope = clientScope(ctx, request, server, 'agent.accounts')
      const outcome = await idempotent(ctx.sql, ctx.keys, { scope, key, payload: body }, async tx => {
        const orgId = await insertOrg(tx, { name: 'Agent account', plan: 'agent' })
        const inbox = await createManagedInbox(tx, orgId, ctx.config.MANAGED_DOMAIN)
        const apiKey = await createApiKey(tx, orgId, null, 'agent account')
        return {
          status: 201,
          data: { org_id: orgId, plan: 'agent' as const, api_key: apiKey.key, key_id: apiKey.id, inbox: presentInbox(inbox) },
        }
      })
      return applyOutcome(set, key, outcome)
    },
    {
      body: t.Object({ terms_accepted: t.Literal(true, { error: 'must be true' }) }),
      response: { 201: Ok(AgentAccount) },
      detail: {
        summary: 'Create an agent account (zero-touch)',
        security: [],
        description: 'Public. Returns an API key and a managed inbox on the reply-only agent plan. Accepts Idempotency-Key (scoped to the caller).',
      },
    },
  )
}
