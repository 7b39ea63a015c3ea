/** Agent networks: the networks, their members, the directory and contact admission. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { presentContact } from '../contacts/service'
import { Contact, contactName, tags } from '../contacts/model'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { IdParams } from '../http/schema'
import { admitAgent, discoverAgents, presentDiscovered } from './discovery'
import { DiscoveredAgent, Network, NetworkMember, skill } from './model'
import {
  acceptInvitation,
  createNetwork,
  deleteNetwork,
  getNetwork,
  INVITATIONS_PER_MINUTE,
  inviteMember,
  listInvitationBlocks,
  listMembers,
  listNetworks,
  presentFor,
  presentMember,
  removeInvitationBlock,
  removeMember,
  updateMember,
  updateNetwork,
} from './service'

const name = t.String({ minLength: 1, maxLength: 100 })
const description = t.String({ maxLength: 1000 })
const MemberParams = t.Object({ id: t.String({ format: 'uuid' }), org_id: t.String({ format: 'uuid', description: 'the member organization' }) })
const AgentParams = t.Object({ id: t.String({ format: 'uuid' }), agent_id: t.String({ format: 'uuid', description: 'the agent id from the directory' }) })
const MANAGER = 'Needs an owner or admin of the organization that owns the network.'

export function networkRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/networks', tags: ['Agent Networks'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `networks:${auth.orgId}:${auth.method === 'connection'}`
        return cursors(ctx).read(scope, query, page => listNetworks(ctx.sql, auth, page), presentFor(auth.orgId))
      },
      {
        query: t.Object(pageQuery()),
        response: { 200: Paged(Network) },
        detail: {
          summary: 'List the networks of the organization',
          description:
            'Networks it belongs to or is invited to, newest first. A connection key sees only the networks it may browse (membership active with can_view).',
        },
      },
    )
    .post(
      '/',
      async ({ auth, body, set }) => {
        set.status = 201
        return createNetwork(ctx.sql, auth, body)
      },
      {
        body: t.Object({ name, description: t.Optional(description) }, { additionalProperties: false }),
        response: { 201: Ok(Network) },
        detail: { summary: 'Create a network', description: 'Needs the owner or admin role. The organization becomes the owner member, active with can_view.' },
      },
    )
    .get('/:id', ({ auth, params }) => getNetwork(ctx.sql, auth.orgId, params.id), {
      params: IdParams,
      response: { 200: Ok(Network) },
      detail: { summary: 'Read a network', description: 'Only for its members and invited organizations; 404 for anyone else.' },
    })
    .patch('/:id', ({ auth, params, body }) => updateNetwork(ctx.sql, auth, params.id, body), {
      params: IdParams,
      body: t.Object({ name: t.Optional(name), description: t.Optional(description) }, { additionalProperties: false, minProperties: 1 }),
      response: { 200: Ok(Network) },
      detail: { summary: 'Rename or describe a network', description: MANAGER },
    })
    .delete('/:id', ({ auth, params }) => deleteNetwork(ctx.sql, auth, params.id), {
      params: IdParams,
      response: { 200: Ok(t.Object({ id: t.String({ format: 'uuid' }), deleted: t.Literal(true) })) },
      detail: { summary: 'Delete a network', description: `${MANAGER} Contacts admitted through it keep their data and lose their send grant.` },
    })
    .get('/invitation-blocks', ({ auth }) => listInvitationBlocks(ctx.sql, auth), {
      response: { 200: Ok(t.Array(t.Object({ org_id: t.String({ format: 'uuid' }), blocked_at: t.String({ format: 'date-time' }) }))) },
      detail: {
        summary: 'List the organizations whose invitations are refused',
        description: 'Blocked when declining or leaving with block=true; newest first.',
      },
    })
    .delete('/invitation-blocks/:org_id', ({ auth, params }) => removeInvitationBlock(ctx.sql, auth, params.org_id), {
      params: t.Object({ org_id: t.String({ format: 'uuid', description: 'the blocked organization' }) }),
      response: { 200: Ok(t.Object({ org_id: t.String({ format: 'uuid' }), unblocked: t.Literal(true) })) },
      detail: {
        summary: 'Lift an invitation block',
        description: 'Needs the owner or admin role. The organization may invite this one again; 404 when it is not blocked.',
      },
    })
    .post('/:id/accept', ({ auth, params }) => acceptInvitation(ctx.sql, auth, params.id), {
      params: IdParams,
      response: { 200: Ok(Network) },
      detail: {
        summary: 'Accept an invitation to a network',
        description: 'Needs an owner or admin of the invited organization. 409 conflict when already a member.',
      },
    })
    .get(
      '/:id/members',
      async ({ auth, params, query }) => {
        const scope = `network-members:${params.id}`
        return cursors(ctx).read(
          scope,
          query,
          page => listMembers(ctx.sql, auth, params.id, page),
          row => presentMember(row),
        )
      },
      {
        params: IdParams,
        query: t.Object(pageQuery()),
        response: { 200: Paged(NetworkMember) },
        detail: { summary: 'List the members of a network', description: 'For active members; an invited organization gets 403 until it accepts.' },
      },
    )
    .post(
      '/:id/members',
      async ({ auth, params, body, set }) => {
        set.status = 201
        return inviteMember(ctx, auth, params.id, body)
      },
      {
        params: IdParams,
        body: t.Object(
          {
            org_id: t.String({ format: 'uuid', description: 'the organization to invite (its GET /v1/whoami org_id)' }),
            can_view: t.Optional(t.Boolean({ description: 'whether it may browse the directory once it joins; default true' })),
          },
          { additionalProperties: false },
        ),
        response: { 201: Ok(NetworkMember) },
        detail: {
          summary: 'Invite an organization',
          description:
            `${MANAGER} The organization joins when one of its owners or admins accepts; it may decline, and block further invitations from this organization (DELETE /v1/networks/{id}/members/{its org_id}?block=true). ` +
            `404 for an unknown organization or one that blocked this one (the two are not told apart), 409 conflict when already a member or invited, 429 rate_limit_exceeded past ${INVITATIONS_PER_MINUTE} invitations a minute per organization.`,
        },
      },
    )
    .patch('/:id/members/:org_id', ({ auth, params, body }) => updateMember(ctx.sql, auth, params.id, params.org_id, body), {
      params: MemberParams,
      body: t.Object(
        { can_view: t.Boolean({ description: 'whether the member (and its connection keys) may browse the directory' }) },
        { additionalProperties: false },
      ),
      response: { 200: Ok(NetworkMember) },
      detail: { summary: "Set a member's can_view", description: MANAGER },
    })
    .delete('/:id/members/:org_id', ({ auth, params, query }) => removeMember(ctx.sql, auth, params.id, params.org_id, { block: query.block }), {
      params: MemberParams,
      query: t.Object({
        block: t.Optional(
          t.Boolean({
            description:
              "with the caller's own org_id: also refuse the network owner organization's invitations from now on (GET /v1/networks/invitation-blocks)",
          }),
        ),
      }),
      response: { 200: Ok(t.Object({ org_id: t.String({ format: 'uuid' }), removed: t.Literal(true) })) },
      detail: {
        summary: 'Remove a member, or leave',
        description: `With another organization's id: ${MANAGER} With the caller's own org_id: leave the network (or decline an invitation), needs an owner or admin of the caller's organization; block=true also blocks the network's owner organization from inviting it again. The owner organization cannot leave (409 conflict) and deletes the network instead.`,
      },
    })
    .get(
      '/:id/agents',
      async ({ auth, params, query }) => {
        const scope = `network-agents:${params.id}:${query.q ?? ''}:${query.skill ?? ''}`
        return cursors(ctx).read(scope, query, page => discoverAgents(ctx.sql, auth, params.id, query, page), presentDiscovered)
      },
      {
        params: IdParams,
        query: t.Object({
          ...pageQuery(),
          q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'searches address, display name and description' })),
          skill: t.Optional(skill),
        }),
        response: { 200: Paged(DiscoveredAgent) },
        detail: {
          summary: 'Discover the agents of a network',
          description: 'The addresses its active members publish, newest first. Needs an active membership with can_view (403 otherwise); connection keys too.',
        },
      },
    )
    .post(
      '/:id/agents/:agent_id/admit',
      async ({ auth, params, body, set }) => {
        const { row, created } = await admitAgent(ctx.sql, auth, params.id, params.agent_id, body)
        set.status = created ? 201 : 200
        return presentContact(row)
      },
      {
        params: AgentParams,
        body: t.Object(
          {
            owner_address: t.String({
              minLength: 3,
              maxLength: 320,
              description: "the organization's address the agent becomes a contact of; a connection key: its own bound address only",
            }),
            name: t.Optional(contactName),
            tags: t.Optional(tags),
          },
          { additionalProperties: false },
        ),
        response: { 200: Ok(Contact), 201: Ok(Contact) },
        detail: {
          summary: 'Admit a discovered agent as a contact',
          description:
            "Creates (201) or updates (200) the contact of owner_address for the agent's address and records a send grant: on the reply-only plan owner_address may then write to the agent first, while the agent accepts contacts in this network. Needs can_view; 409 conflict (details.reason not_accepting_contacts) when the agent does not accept contacts. A connection key may admit only for its own address (403 otherwise).",
        },
      },
    )
}
