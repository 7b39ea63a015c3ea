/**
 * Agent networks (the networks, their members and the directory) and the publishing of the
 * organization's addresses, declared once for REST, MCP and GraphQL (src/http/operation.ts).
 * Network management and publishing are REST only (no MCP tool). The services check what a
 * connection key may do (browse with can_view). Admitting an agent of the directory as a contact
 * is declared by contacts (src/contacts/operations.ts), under this tag. Removing a member takes `block` in the query of its DELETE (`queryInput`).
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Deleted, OneOf } from '../http/schema'
import { discoverAgents, presentDiscovered } from './discovery'
import { DiscoveredAgent, Network, NetworkMember, PublishedAgent, SKILL_MAX, skill } from './model'
import { listPublished, presentPublished, publishAddress, unpublishAddress } from './publishing'
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

export const TAG = 'Agent Networks'
const Id = { id: t.String({ format: 'uuid', description: 'the network' }) }
const MemberParams = { id: Id.id, org_id: t.String({ format: 'uuid', description: 'the member organization' }) }
const name = t.String({ minLength: 1, maxLength: 100 })
const description = t.String({ maxLength: 1000 })
export const MANAGER = 'Needs an owner or admin of the organization that owns the network.'

export const networkOperations = [
  listOperation({
    name: 'list_networks',
    method: 'GET',
    path: '/v1/networks',
    tag: TAG,
    summary: 'List the networks of the organization',
    description:
      'Networks it belongs to or is invited to, newest first, with its membership. A connection key sees only the networks it may browse (membership active with can_view).',
    graphql: {
      field: 'networks',
      type: 'Network',
      description:
        'The networks the organization belongs to or is invited to, newest first (as GET /v1/networks).\nA connection key sees those it may browse (active, canView).',
    },
    list: {
      item: Network,
      scope: ({ auth }) => `networks:${auth.orgId}:${auth.method === 'connection'}`,
      // a network is presented as the caller's organization sees it (its membership)
      fetch: async ({ ctx, auth }, _args, page) => {
        const { rows, total } = await listNetworks(ctx.sql, auth, page)
        return { rows: rows.map(presentFor(auth.orgId)), total }
      },
      present: network => network,
    },
  }),
  operation({
    name: 'create_network',
    method: 'POST',
    path: '/v1/networks',
    tag: TAG,
    summary: 'Create a network',
    description: 'Needs the owner or admin role. The organization becomes the owner member, active with can_view.',
    input: t.Object({ name, description: t.Optional(description) }, { additionalProperties: false }),
    output: Network,
    status: 201,
    mcp: false,
    handle: ({ ctx, auth }, body) => createNetwork(ctx.sql, auth, body),
  }),
  operation({
    name: 'get_network',
    method: 'GET',
    path: '/v1/networks/:id',
    tag: TAG,
    summary: 'Read a network',
    description: 'Only for its members and invited organizations; 404 for anyone else.',
    params: Id,
    resource: 'network',
    output: Network,
    mcp: false,
    graphql: { field: 'network', type: 'Network', description: 'One network the organization is in (as GET /v1/networks/{id}). Not for connection keys.' },
    handle: ({ ctx, auth }, { id }) => getNetwork(ctx.sql, auth.orgId, id),
  }),
  operation({
    name: 'update_network',
    method: 'PATCH',
    path: '/v1/networks/:id',
    tag: TAG,
    summary: 'Rename or describe a network',
    description: MANAGER,
    params: Id,
    resource: 'network',
    input: t.Object({ name: t.Optional(name), description: t.Optional(description) }, { additionalProperties: false, minProperties: 1 }),
    output: Network,
    mcp: false,
    handle: ({ ctx, auth }, { id, ...changes }) => updateNetwork(ctx.sql, auth, id, changes),
  }),
  operation({
    name: 'delete_network',
    method: 'DELETE',
    path: '/v1/networks/:id',
    tag: TAG,
    summary: 'Delete a network',
    description: `${MANAGER} Contacts admitted through it keep their data and lose their send grant.`,
    params: Id,
    resource: 'network',
    output: Deleted,
    mcp: false,
    handle: ({ ctx, auth }, { id }) => deleteNetwork(ctx.sql, auth, id),
  }),
  operation({
    name: 'list_network_invitation_blocks',
    method: 'GET',
    path: '/v1/networks/invitation-blocks',
    tag: TAG,
    summary: 'List the organizations whose invitations are refused',
    description: 'Blocked when declining or leaving with block=true; newest first.',
    output: t.Array(t.Object({ org_id: t.String({ format: 'uuid' }), blocked_at: t.String({ format: 'date-time' }) })),
    mcp: false,
    handle: ({ ctx, auth }) => listInvitationBlocks(ctx.sql, auth),
  }),
  operation({
    name: 'delete_network_invitation_block',
    method: 'DELETE',
    path: '/v1/networks/invitation-blocks/:org_id',
    tag: TAG,
    summary: 'Lift an invitation block',
    description: 'Needs the owner or admin role. The organization may invite this one again; 404 when it is not blocked.',
    params: { org_id: t.String({ format: 'uuid', description: 'the blocked organization' }) },
    output: t.Object({ org_id: t.String({ format: 'uuid' }), unblocked: t.Literal(true) }),
    mcp: false,
    handle: ({ ctx, auth }, { org_id }) => removeInvitationBlock(ctx.sql, auth, org_id),
  }),
  operation({
    name: 'accept_network_invitation',
    method: 'POST',
    path: '/v1/networks/:id/accept',
    tag: TAG,
    summary: 'Accept an invitation to a network',
    description: 'Needs an owner or admin of the invited organization. 409 conflict when already a member.',
    params: Id,
    resource: 'network',
    output: Network,
    mcp: false,
    handle: ({ ctx, auth }, { id }) => acceptInvitation(ctx.sql, auth, id),
  }),
  listOperation({
    name: 'list_network_members',
    method: 'GET',
    path: '/v1/networks/:id/members',
    tag: TAG,
    summary: 'List the members of a network',
    description: 'For active members; an invited organization gets 403 until it accepts.',
    params: Id,
    resource: 'network',
    mcp: false,
    graphql: {
      field: 'networkMembers',
      type: 'NetworkMember',
      params: { id: 'networkId' },
      description: "A network's members, for its active members (as GET /v1/networks/{id}/members). Not for connection keys.",
    },
    list: {
      item: NetworkMember,
      scope: (_call, { id }) => `network-members:${id}`,
      fetch: ({ ctx, auth }, { id }, page) => listMembers(ctx.sql, auth, id, page),
      present: row => presentMember(row),
    },
  }),
  operation({
    name: 'invite_network_member',
    method: 'POST',
    path: '/v1/networks/:id/members',
    tag: TAG,
    summary: 'Invite an organization',
    description:
      `${MANAGER} The organization joins when one of its owners or admins accepts; it may decline, and block further invitations from this organization (DELETE /v1/networks/{id}/members/{its org_id}?block=true). ` +
      `404 for an unknown organization or one that blocked this one (the two are not told apart), 409 conflict when already a member or invited, 429 rate_limit_exceeded past ${INVITATIONS_PER_MINUTE} invitations a minute per organization.`,
    params: Id,
    resource: 'network',
    input: t.Object(
      {
        org_id: t.String({ format: 'uuid', description: 'the organization to invite (its GET /v1/whoami org_id)' }),
        can_view: t.Optional(t.Boolean({ description: 'whether it may browse the directory once it joins; default true' })),
      },
      { additionalProperties: false },
    ),
    output: NetworkMember,
    status: 201,
    mcp: false,
    handle: ({ ctx, auth }, { id, ...invitation }) => inviteMember(ctx, auth, id, invitation),
  }),
  operation({
    name: 'update_network_member',
    method: 'PATCH',
    path: '/v1/networks/:id/members/:org_id',
    tag: TAG,
    summary: "Set a member's can_view",
    description: MANAGER,
    params: MemberParams,
    resource: 'network',
    input: t.Object(
      { can_view: t.Boolean({ description: 'whether the member (and its connection keys) may browse the directory' }) },
      { additionalProperties: false },
    ),
    output: NetworkMember,
    mcp: false,
    handle: ({ ctx, auth }, { id, org_id, ...changes }) => updateMember(ctx.sql, auth, id, org_id, changes),
  }),
  operation({
    name: 'remove_network_member',
    method: 'DELETE',
    path: '/v1/networks/:id/members/:org_id',
    tag: TAG,
    summary: 'Remove a member, or leave',
    description: `With another organization's id: ${MANAGER} With the caller's own org_id: leave the network (or decline an invitation), needs an owner or admin of the caller's organization; block=true also blocks the network's owner organization from inviting it again. The owner organization cannot leave (409 conflict) and deletes the network instead.`,
    params: { id: t.String({ format: 'uuid' }), org_id: MemberParams.org_id },
    input: t.Object({
      block: t.Optional(
        t.Boolean({
          description:
            "with the caller's own org_id: also refuse the network owner organization's invitations from now on (GET /v1/networks/invitation-blocks)",
        }),
      ),
    }),
    queryInput: true,
    output: t.Object({ org_id: t.String({ format: 'uuid' }), removed: t.Literal(true) }),
    mcp: false,
    handle: ({ ctx, auth }, { id, org_id, block }) => removeMember(ctx.sql, auth, id, org_id, { block }),
  }),
  listOperation({
    name: 'discover_network_agents',
    method: 'GET',
    path: '/v1/networks/:id/agents',
    tag: TAG,
    summary: 'Discover the agents of a network',
    description:
      'The addresses its active members publish (address, name, description, skills, whether they accept contacts), newest first. Needs an active membership with can_view (403 otherwise); connection keys too.',
    params: { id: t.String({ format: 'uuid', description: 'the network (from list_networks)' }) },
    resource: 'network',
    input: t.Object({
      q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'searches address, display name and description' })),
      skill: t.Optional(skill),
    }),
    graphql: {
      field: 'networkAgents',
      type: 'DiscoveredAgent',
      params: { id: 'networkId' },
      description:
        "A network's directory: the agents its active members publish, newest first (as GET\n/v1/networks/{id}/agents). Needs an active membership with canView; connection keys too.",
    },
    list: {
      item: DiscoveredAgent,
      scope: (_call, { id, q, skill }) => `network-agents:${id}:${q ?? ''}:${skill ?? ''}`,
      fetch: ({ ctx, auth }, { id, q, skill }, page) => discoverAgents(ctx.sql, auth, id, { q, skill }, page),
      present: presentDiscovered,
    },
  }),
]

const Address = { address: t.String({ minLength: 3, maxLength: 320, description: 'an address of the organization' }) }

export const publishedAgentOperations = [
  operation({
    name: 'list_published_agents',
    method: 'GET',
    path: '/v1/published-agents',
    tag: TAG,
    summary: 'List the published addresses of the organization',
    output: t.Array(PublishedAgent),
    mcp: false,
    graphql: {
      field: 'publishedAgents',
      type: '[PublishedAgent!]',
      description: 'The addresses the organization publishes (as GET /v1/published-agents). Not for connection keys.',
    },
    handle: async ({ ctx, auth }) => (await listPublished(ctx.sql, auth.orgId)).map(r => presentPublished(ctx.config, r)),
  }),
  operation({
    name: 'publish_agent',
    method: 'PUT',
    path: '/v1/published-agents/:address',
    tag: TAG,
    summary: 'Publish an address, or change how it is published',
    description:
      'Needs the owner or admin role. The address (a managed inbox or an address at a verified domain) appears in the directory of every network the organization is an active member of; with visibility public also in the built-in registry and as a public A2A agent card. Omitted fields take their defaults (this is a replacement). 201 when newly published, 200 when changed.',
    params: Address,
    input: t.Object(
      {
        display_name: t.String({ minLength: 1, maxLength: 100 }),
        description: t.Optional(t.String({ maxLength: 2000 })),
        skills: t.Optional(t.Array(skill, { maxItems: SKILL_MAX, description: `up to ${SKILL_MAX}; stored lowercase` })),
        accepts_contacts: t.Optional(t.Boolean({ description: 'default true' })),
        visibility: t.Optional(OneOf(['networks', 'public'] as const, { description: 'default networks' })),
      },
      { additionalProperties: false },
    ),
    output: PublishedAgent,
    status: 201,
    mayFindExisting: true,
    mcp: false,
    async handle({ ctx, auth, status }, { address, ...input }) {
      const { row, created } = await publishAddress(ctx.sql, auth, address, input)
      if (!created) status?.(200)
      return presentPublished(ctx.config, row)
    },
  }),
  operation({
    name: 'unpublish_agent',
    method: 'DELETE',
    path: '/v1/published-agents/:address',
    tag: TAG,
    summary: 'Stop publishing an address',
    description: 'Needs the owner or admin role. Contacts admitted from it keep their data and lose their send grant.',
    params: Address,
    output: t.Object({ address: t.String(), unpublished: t.Literal(true) }),
    mcp: false,
    handle: ({ ctx, auth }, { address }) => unpublishAddress(ctx.sql, auth, address),
  }),
]
