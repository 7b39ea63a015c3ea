/**
 * The suppression list, declared once for REST, MCP and GraphQL (src/http/operation.ts): the
 * addresses the organization no longer sends to, added by hard bounces, complaints, or by hand.
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Address } from '../http/schema'
import { CreateSuppression, Suppression } from './model'
import { addSuppression, deleteSuppression, listSuppressions, presentSuppression } from './suppressions'

const TAG = 'Suppressions'

const GATE =
  'A send to a listed address is refused with 403 recipient_not_allowed and a gate suppression_list in error.gates[] naming the address ' +
  '(reason recipient_hard_bounced, recipient_complained or recipient_suppressed).'

const AddressParam = { address: t.String({ ...Address, description: 'the suppressed address (case does not matter)' }) }

export const suppressionOperations = [
  listOperation({
    name: 'list_suppressions',
    method: 'GET',
    path: '/v1/suppressions',
    tag: TAG,
    summary: 'List suppressed addresses',
    description: `The addresses the organization no longer sends to, newest first: hard bounces and complaints add them automatically (soft bounces never do), people add them by hand. ${GATE}`,
    graphql: { field: 'suppressions', type: 'Suppression', description: 'The suppression list, newest first (as GET /v1/suppressions).' },
    list: {
      item: Suppression,
      scope: ({ auth }) => `suppressions:${auth.orgId}`,
      fetch: ({ ctx, auth }, _args, page) => listSuppressions(ctx, auth.orgId, page),
      present: presentSuppression,
    },
  }),
  operation({
    name: 'create_suppression',
    method: 'POST',
    path: '/v1/suppressions',
    tag: TAG,
    summary: 'Suppress an address',
    description: `Adds an address to the suppression list by hand (reason manual), with an optional note. An address already listed is answered as it is, with 200 instead of 201. ${GATE}`,
    input: CreateSuppression,
    output: Suppression,
    status: 201,
    mayFindExisting: true,
    mcp: { reportsCreated: true },
    async handle({ ctx, auth, status }, { address, detail }) {
      const { row, created } = await addSuppression(ctx, auth.orgId, address, detail ?? null)
      if (!created) status?.(200)
      return presentSuppression(row)
    },
  }),
  operation({
    name: 'delete_suppression',
    method: 'DELETE',
    path: '/v1/suppressions/:address',
    tag: TAG,
    summary: 'Stop suppressing an address',
    description: 'Deletes an address from the suppression list, whatever put it there, so sends to it go out again. An address not listed is 404.',
    params: AddressParam,
    output: t.Object({ address: t.String(), deleted: t.Literal(true) }),
    async handle({ ctx, auth }, { address }) {
      const row = await deleteSuppression(ctx, auth.orgId, address)
      return { address: row.address, deleted: true as const }
    },
  }),
]
