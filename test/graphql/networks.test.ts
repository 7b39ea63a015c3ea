/**
 * Networks, published agents, registries, contacts and address notes through /graphql: a query per type
 * compared with the REST answers, the connection-key rules of those routes (discovery only with
 * can_view, notes readable, contacts and network management not), and isolation.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { memoryResolver } from '../../src/dns/resolver'
import { errorCodes, gql, gqlData } from './helpers'

let t: TestApp
let owner: TestOrg
let member: TestOrg
let stranger: TestOrg
let ownerAgent: string
let memberAgent: string
let memberKey: string
let networkId: string
const rest: Record<string, any> = {}

const get = (org: TestOrg, path: string) => t.request('GET', path, { key: org.key }).then(r => expectOk(r))

beforeAll(async () => {
  t = await testApp({}, { resolver: memoryResolver({}) })
  ;[owner, member, stranger] = await Promise.all([createOrg(), createOrg(), createOrg()])
  ownerAgent = await managedAddress(t.ctx, owner.orgId)
  memberAgent = await managedAddress(t.ctx, member.orgId)
  const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: member.key, body: { address: memberAgent } }), 201)
  memberKey = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
  rest.published = expectOk(
    await t.request('PUT', `/v1/published-agents/${ownerAgent}`, {
      key: owner.key,
      body: { display_name: 'Invoice bot', description: 'Reads invoices', skills: ['invoices', 'ocr'] },
    }),
    201,
  )
  networkId = expectOk(await t.request('POST', '/v1/networks', { key: owner.key, body: { name: 'Partners', description: 'who we work with' } }), 201).id
  expectOk(await t.request('POST', `/v1/networks/${networkId}/members`, { key: owner.key, body: { org_id: member.orgId, can_view: false } }), 201)
  expectOk(await t.request('POST', `/v1/networks/${networkId}/accept`, { key: member.key }))
  rest.contact = expectOk(
    await t.request('POST', '/v1/contacts', {
      key: owner.key,
      body: { owner_address: ownerAgent, address: 'sam@partner.example', name: 'Sam', tags: ['vip'] },
    }),
    201,
  )
  rest.note = expectOk(
    await t.request('POST', '/v1/address-notes', { key: member.key, body: { address: 'sam@partner.example', body: 'prefers mornings' } }),
    201,
  )
  rest.agentNote = expectOk(
    await t.request('POST', '/v1/address-notes', { key: memberKey, body: { address: 'sam@partner.example', body: 'replied within the hour' } }),
    201,
  )
})

describe('a query per type', () => {
  test('Network, NetworkMembership, NetworkMember', async () => {
    const network = await get(owner, `/v1/networks/${networkId}`)
    const members = await get(owner, `/v1/networks/${networkId}/members`)
    const data = await gqlData(
      t,
      `{
      networks { totalCount nodes { id } }
      network(id: "${networkId}") { id name description ownerOrgId membership { status canView isOwner } memberCount createdAt }
      networkMembers(networkId: "${networkId}") { totalCount nodes { orgId orgName status canView isOwner invitedAt joinedAt } }
    }`,
      { key: owner.key },
    )
    expect(data.networks).toEqual({ totalCount: 1, nodes: [{ id: networkId }] })
    expect(data.network).toEqual({
      id: networkId,
      name: 'Partners',
      description: 'who we work with',
      ownerOrgId: owner.orgId,
      membership: { status: 'active', canView: true, isOwner: true },
      memberCount: 2,
      createdAt: network.created_at,
    })
    expect(data.networkMembers.totalCount).toBe(2)
    expect(data.networkMembers.nodes).toEqual(
      members.map((m: any) => ({
        orgId: m.org_id,
        orgName: m.org_name,
        status: m.status,
        canView: m.can_view,
        isOwner: m.is_owner,
        invitedAt: m.invited_at,
        joinedAt: m.joined_at,
      })),
    )
  })

  test('DiscoveredAgent, AgentOrg, PublishedAgent', async () => {
    const data = await gqlData(
      t,
      `{
      networkAgents(networkId: "${networkId}", skill: "ocr") { totalCount nodes { id address displayName description skills acceptsContacts lastActiveAt org { id name } } }
      publishedAgents { id address displayName skills acceptsContacts visibility agentCardUrl createdAt }
    }`,
      { key: owner.key },
    )
    const [agent] = await get(owner, `/v1/networks/${networkId}/agents?skill=ocr`)
    expect(data.networkAgents).toEqual({
      totalCount: 1,
      nodes: [
        {
          id: agent.id,
          address: ownerAgent,
          displayName: 'Invoice bot',
          description: 'Reads invoices',
          skills: ['invoices', 'ocr'],
          acceptsContacts: true,
          lastActiveAt: null,
          org: agent.org,
        },
      ],
    })
    const p = rest.published
    expect(data.publishedAgents).toEqual([
      {
        id: p.id,
        address: ownerAgent,
        displayName: 'Invoice bot',
        skills: p.skills,
        acceptsContacts: true,
        visibility: p.visibility,
        agentCardUrl: p.agent_card_url,
        createdAt: p.created_at,
      },
    ])
  })

  test('Registry, RegistryAgent: the built-in registry lists publicly published agents, with their cards', async () => {
    const name = `Public bot ${crypto.randomUUID().slice(0, 8)}`
    const publicAgent = await managedAddress(t.ctx, owner.orgId)
    const published = expectOk(
      await t.request('PUT', `/v1/published-agents/${publicAgent}`, { key: owner.key, body: { display_name: name, skills: ['search'], visibility: 'public' } }),
      201,
    )
    const [builtin] = await get(owner, '/v1/registries')
    const data = await gqlData(
      t,
      `{
      registries { id kind name status agentCount }
      registry(id: "builtin") { id kind }
      registryAgents(registryId: "builtin", q: "${name}") { totalCount nodes { id registryId name address skills card } }
      registryAgent(registryId: "builtin", id: "${published.id}") { name address card }
    }`,
      { key: owner.key },
    )
    expect(data.registries[0]).toEqual({ id: 'builtin', kind: 'builtin', name: builtin.name, status: builtin.status, agentCount: builtin.agent_count })
    expect(data.registry).toEqual({ id: 'builtin', kind: 'builtin' })
    expect(data.registryAgents).toEqual({
      totalCount: 1,
      nodes: [{ id: published.id, registryId: 'builtin', name, address: publicAgent, skills: ['search'], card: null }],
    })
    const detail = await get(owner, `/v1/registries/builtin/agents/${published.id}`)
    expect(data.registryAgent).toEqual({ name, address: publicAgent, card: detail.card })
  })

  test('Contact', async () => {
    const c = rest.contact
    const data = await gqlData(
      t,
      `{ contacts(tag: "vip") { totalCount nodes { id } } contact(id: "${c.id}") { ownerAddress address name tags source networkId agentId sendGrant firstSeenAt lastContactedAt messagesReceived messagesSent createdAt updatedAt } }`,
      { key: owner.key },
    )
    expect(data.contacts).toEqual({ totalCount: 1, nodes: [{ id: c.id }] })
    expect(data.contact).toEqual({
      ownerAddress: ownerAgent,
      address: 'sam@partner.example',
      name: 'Sam',
      tags: ['vip'],
      source: 'manual',
      networkId: null,
      agentId: null,
      sendGrant: c.send_grant,
      firstSeenAt: null,
      lastContactedAt: null,
      messagesReceived: 0,
      messagesSent: 0,
      createdAt: c.created_at,
      updatedAt: c.updated_at,
    })
  })

  test('AddressNote, NoteAuthor', async () => {
    const data = await gqlData(
      t,
      `{ addressNotes(address: "SAM@partner.example") { totalCount nodes { id body author { kind address } } } addressNote(id: "${rest.note.id}") { id address body author { kind id address } version createdAt updatedAt } }`,
      { key: member.key },
    )
    expect(data.addressNotes).toEqual({
      totalCount: 2,
      nodes: [
        { id: rest.agentNote.id, body: 'replied within the hour', author: { kind: 'connection', address: memberAgent } },
        { id: rest.note.id, body: 'prefers mornings', author: { kind: 'member', address: null } },
      ],
    })
    const n = rest.note
    expect(data.addressNote).toEqual({
      id: n.id,
      address: 'sam@partner.example',
      body: 'prefers mornings',
      author: { kind: 'member', id: n.author.id, address: null },
      version: 1,
      createdAt: n.created_at,
      updatedAt: n.updated_at,
    })
  })
})

describe('connection keys: the routes of rule 2', () => {
  test('discovery only with can_view; notes and the contacts of its own address readable; one network, members and publishing not', async () => {
    // the membership has can_view off: the key sees no network to browse, and the directory is refused
    const off = await gql(t, `{ networks { totalCount } networkAgents(networkId: "${networkId}") { totalCount } addressNotes { totalCount } }`, {
      key: memberKey,
    })
    expect(off.body.data).toMatchObject({ networks: { totalCount: 0 }, networkAgents: null, addressNotes: { totalCount: 2 } })
    expect(errorCodes(off)).toEqual({ networkAgents: 'forbidden' })

    expectOk(await t.request('PATCH', `/v1/networks/${networkId}/members/${member.orgId}`, { key: owner.key, body: { can_view: true } }))
    const on = await gql(
      t,
      `{
      networks { totalCount } networkAgents(networkId: "${networkId}", skill: "ocr") { nodes { address } }
      network(id: "${networkId}") { id } networkMembers(networkId: "${networkId}") { totalCount } contacts { totalCount } contact(id: "${rest.contact.id}") { id } publishedAgents { id }
      registries { id }
    }`,
      { key: memberKey },
    )
    expect(on.body.data).toMatchObject({
      networks: { totalCount: 1 },
      networkAgents: { nodes: [{ address: ownerAgent }] },
      network: null,
      networkMembers: null,
      // the contacts of its own address only: the organization's other contact is not found
      contacts: { totalCount: 0 },
      contact: null,
      publishedAgents: null,
      registries: null,
    })
    expect(errorCodes(on)).toEqual({
      network: 'forbidden',
      networkMembers: 'forbidden',
      contact: 'not_found',
      publishedAgents: 'forbidden',
      registries: 'forbidden',
    })
  })
})

describe('isolation', () => {
  test("a stranger sees none of it: another organization's network, contact and note are not_found", async () => {
    const res = await gql(
      t,
      `{
      networks { totalCount } network(id: "${networkId}") { id } networkAgents(networkId: "${networkId}") { totalCount }
      contacts { totalCount } contact(id: "${rest.contact.id}") { id } addressNotes { totalCount } addressNote(id: "${rest.note.id}") { id } publishedAgents { id }
    }`,
      { key: stranger.key },
    )
    expect(res.body.data).toMatchObject({
      networks: { totalCount: 0 },
      network: null,
      networkAgents: null,
      contacts: { totalCount: 0 },
      contact: null,
      addressNotes: { totalCount: 0 },
      addressNote: null,
      publishedAgents: [],
    })
    expect(errorCodes(res)).toEqual({ network: 'not_found', networkAgents: 'not_found', contact: 'not_found', addressNote: 'not_found' })
  })
})
