/**
 * Agent networks: creating, inviting, accepting, can_view, leaving and removing; discovery of
 * the agents members publish, with and without can_view, for org credentials and connection
 * keys; recipient-bound contact admission; isolation across organizations.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { memoryResolver } from '../../src/dns/resolver'
import { INVITATIONS_PER_MINUTE } from '../../src/networks/service'

let t: TestApp
let owner: TestOrg
let member: TestOrg
let stranger: TestOrg
let ownerAgent: string
let memberAgent: string
let memberSibling: string
let memberKey: string
let networkId: string

async function connect(org: TestOrg, address: string): Promise<string> {
  const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address } }), 201)
  return expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
}

const publish = (org: TestOrg, address: string, body: Record<string, unknown>) => t.request('PUT', `/v1/published-agents/${address}`, { key: org.key, body })

beforeAll(async () => {
  t = await testApp({}, { resolver: memoryResolver({}) })
  ;[owner, member, stranger] = await Promise.all([createOrg(), createOrg(), createOrg()])
  ownerAgent = await managedAddress(t.ctx, owner.orgId)
  memberAgent = await managedAddress(t.ctx, member.orgId)
  memberSibling = await managedAddress(t.ctx, member.orgId)
  memberKey = await connect(member, memberAgent)
  expectOk(await publish(owner, ownerAgent, { display_name: 'Invoice bot', description: 'Reads invoices', skills: ['Invoices', 'ocr'] }), 201)
  expectOk(await publish(member, memberAgent, { display_name: 'Translator', skills: ['translation'], accepts_contacts: false }), 201)
  networkId = expectOk(await t.request('POST', '/v1/networks', { key: owner.key, body: { name: 'Partners' } }), 201).id
})

describe('publishing', () => {
  test("an address is published once: PUT again replaces it (200); skills are lowercase; another org's address is refused", async () => {
    const again = expectOk(await publish(owner, ownerAgent, { display_name: 'Invoice bot', description: 'Reads invoices', skills: ['Invoices', 'ocr'] }))
    expect(again.skills).toEqual(['invoices', 'ocr'])
    expect(again.visibility).toBe('networks')
    expect(again.agent_card_url).toBeNull()
    expectError(await publish(owner, memberAgent, { display_name: 'Not mine' }), 400, 'validation_error', /^address: /)
    expectError(await publish(owner, ownerAgent, { display_name: '' }), 400, 'validation_error', /display_name/)
    const listed = expectOk(await t.request('GET', '/v1/published-agents', { key: owner.key }))
    expect(listed.map((a: { address: string }) => a.address)).toEqual([ownerAgent])
  })

  test('a member role cannot publish', async () => {
    const plain = await createOrg({ role: 'member' })
    const address = await managedAddress(t.ctx, plain.orgId)
    expectError(await publish(plain, address, { display_name: 'x' }), 403, 'forbidden')
  })
})

describe('membership', () => {
  test('invite, see the invitation, accept; members are listed with their can_view', async () => {
    const invited = expectOk(
      await t.request('POST', `/v1/networks/${networkId}/members`, { key: owner.key, body: { org_id: member.orgId, can_view: false } }),
      201,
    )
    expect(invited).toMatchObject({ org_id: member.orgId, status: 'invited', can_view: false, is_owner: false })
    expectError(await t.request('POST', `/v1/networks/${networkId}/members`, { key: owner.key, body: { org_id: member.orgId } }), 409, 'conflict')
    const seen = expectOk(await t.request('GET', '/v1/networks', { key: member.key }))
    expect(seen.map((n: { id: string }) => n.id)).toContain(networkId)
    expect(seen.find((n: { id: string }) => n.id === networkId).membership).toEqual({ status: 'invited', can_view: false, is_owner: false })
    // an invited organization sees no directory and no members yet
    expectError(await t.request('GET', `/v1/networks/${networkId}/agents`, { key: member.key }), 403, 'forbidden')
    expectError(await t.request('GET', `/v1/networks/${networkId}/members`, { key: member.key }), 403, 'forbidden')
    const accepted = expectOk(await t.request('POST', `/v1/networks/${networkId}/accept`, { key: member.key }))
    expect(accepted.membership.status).toBe('active')
    expect(accepted.member_count).toBe(2)
    const members = await t.request('GET', `/v1/networks/${networkId}/members`, { key: member.key })
    expect(
      expectOk(members)
        .map((m: { org_id: string; is_owner: boolean }) => [m.org_id, m.is_owner])
        .sort(),
    ).toEqual(
      [
        [member.orgId, false],
        [owner.orgId, true],
      ].sort(),
    )
    expect(members.body.meta).toMatchObject({ total: 2, cursor: null })
  })

  test('only the owner organization manages members; unknown organizations are 404', async () => {
    expectError(await t.request('PATCH', `/v1/networks/${networkId}/members/${owner.orgId}`, { key: member.key, body: { can_view: false } }), 403, 'forbidden')
    expectError(await t.request('POST', `/v1/networks/${networkId}/members`, { key: owner.key, body: { org_id: crypto.randomUUID() } }), 404, 'not_found')
    expectError(await t.request('DELETE', `/v1/networks/${networkId}/members/${owner.orgId}`, { key: owner.key }), 409, 'conflict')
  })
})

describe('discovery', () => {
  test('without can_view: the member and its connection key are refused (403); the key does not even list the network', async () => {
    expectError(await t.request('GET', `/v1/networks/${networkId}/agents`, { key: member.key }), 403, 'forbidden', /can_view/)
    expectError(await t.request('GET', `/v1/networks/${networkId}/agents`, { key: memberKey }), 403, 'forbidden', /can_view/)
    expect(expectOk(await t.request('GET', '/v1/networks', { key: memberKey }))).toEqual([])
  })

  test('with can_view: the directory lists the agents of active members, searchable by text and skill', async () => {
    expectOk(await t.request('PATCH', `/v1/networks/${networkId}/members/${member.orgId}`, { key: owner.key, body: { can_view: true } }))
    for (const key of [member.key, memberKey]) {
      const res = await t.request('GET', `/v1/networks/${networkId}/agents`, { key })
      const agents = expectOk(res)
      expect(agents.map((a: { address: string }) => a.address).sort()).toEqual([ownerAgent, memberAgent].sort())
      expect(res.body.meta.total).toBe(2)
      const invoice = agents.find((a: { address: string }) => a.address === ownerAgent)
      expect(invoice).toEqual({
        id: expect.any(String),
        address: ownerAgent,
        display_name: 'Invoice bot',
        description: 'Reads invoices',
        skills: ['invoices', 'ocr'],
        accepts_contacts: true,
        last_active_at: null,
        org: { id: owner.orgId, name: expect.any(String) },
      })
    }
    const bySkill = expectOk(await t.request('GET', `/v1/networks/${networkId}/agents?skill=translation`, { key: memberKey }))
    expect(bySkill.map((a: { address: string }) => a.address)).toEqual([memberAgent])
    const byText = expectOk(await t.request('GET', `/v1/networks/${networkId}/agents?q=invoice`, { key: member.key }))
    expect(byText.map((a: { address: string }) => a.address)).toEqual([ownerAgent])
    expect(expectOk(await t.request('GET', '/v1/networks', { key: memberKey })).map((n: { id: string }) => n.id)).toEqual([networkId])
  })

  test('pages follow the cursor', async () => {
    const first = await t.request('GET', `/v1/networks/${networkId}/agents?limit=1`, { key: member.key })
    expect(first.body.data).toHaveLength(1)
    const second = await t.request('GET', `/v1/networks/${networkId}/agents?limit=1&cursor=${first.body.meta.cursor}`, { key: member.key })
    expect(second.body.data).toHaveLength(1)
    expect(second.body.meta.cursor).toBeNull()
    expect(second.body.data[0].id).not.toBe(first.body.data[0].id)
  })
})

describe('contact admission', () => {
  const admit = (key: string, agentId: string, body: Record<string, unknown>) =>
    t.request('POST', `/v1/networks/${networkId}/agents/${agentId}/admit`, { key, body })
  let invoiceId: string
  let translatorId: string
  beforeAll(async () => {
    const agents = expectOk(await t.request('GET', `/v1/networks/${networkId}/agents`, { key: member.key }))
    invoiceId = agents.find((a: { address: string }) => a.address === ownerAgent).id
    translatorId = agents.find((a: { address: string }) => a.address === memberAgent).id
  })

  test('a connection key admitting a contact for another address is refused (403), and nothing is written', async () => {
    expectError(await admit(memberKey, invoiceId, { owner_address: memberSibling }), 403, 'forbidden', /owner_address/)
    const contacts = expectOk(await t.request('GET', `/v1/contacts?owner_address=${memberSibling}`, { key: member.key }))
    expect(contacts).toEqual([])
  })

  test('a connection key admits for its own address: the contact carries a granted send grant', async () => {
    const contact = expectOk(await admit(memberKey, invoiceId, { owner_address: memberAgent.toUpperCase(), tags: ['billing'] }), 201)
    expect(contact).toMatchObject({
      owner_address: memberAgent,
      address: ownerAgent,
      name: 'Invoice bot',
      tags: ['billing'],
      source: 'network',
      network_id: networkId,
      agent_id: invoiceId,
      send_grant: 'granted',
    })
    // again: the same contact, updated (200)
    expect(expectOk(await admit(memberKey, invoiceId, { owner_address: memberAgent })).id).toBe(contact.id)
  })

  test('an agent that does not accept contacts cannot be admitted (409)', async () => {
    expectError(await admit(owner.key, translatorId, { owner_address: ownerAgent }), 409, 'conflict', /does not accept contacts/)
  })

  test('the grant is denied once the agent no longer accepts contacts', async () => {
    expectOk(await publish(owner, ownerAgent, { display_name: 'Invoice bot', skills: ['invoices'], accepts_contacts: false }))
    const [contact] = expectOk(await t.request('GET', `/v1/contacts?owner_address=${memberAgent}`, { key: member.key }))
    expect(contact.send_grant).toBe('denied')
    expectOk(await publish(owner, ownerAgent, { display_name: 'Invoice bot', description: 'Reads invoices', skills: ['invoices', 'ocr'] }))
    const [again] = expectOk(await t.request('GET', `/v1/contacts?owner_address=${memberAgent}`, { key: member.key }))
    expect(again.send_grant).toBe('granted')
  })

  test('a connection key cannot manage networks, publish or change contacts (403)', async () => {
    expectError(await t.request('POST', '/v1/networks', { key: memberKey, body: { name: 'x' } }), 403, 'forbidden')
    expectError(await t.request('GET', `/v1/networks/${networkId}`, { key: memberKey }), 403, 'forbidden')
    expectError(await t.request('GET', `/v1/networks/${networkId}/members`, { key: memberKey }), 403, 'forbidden')
    expectError(await t.request('DELETE', `/v1/networks/${networkId}/members/${member.orgId}`, { key: memberKey }), 403, 'forbidden')
    expectError(await publish({ ...member, key: memberKey }, memberAgent, { display_name: 'x' }), 403, 'forbidden')
    expectError(await t.request('POST', '/v1/contacts', { key: memberKey, body: { owner_address: memberAgent, address: 'x@example.com' } }), 403, 'forbidden')
    expectError(await t.request('GET', '/v1/registries', { key: memberKey }), 403, 'forbidden')
  })
})

describe('invitations to any organization id are bounded', () => {
  test('the invitee declines and blocks the inviter: its later invitations are 404 like an unknown id, until the block is lifted', async () => {
    const [spammer, target] = await Promise.all([createOrg(), createOrg()])
    const first = expectOk(await t.request('POST', '/v1/networks', { key: spammer.key, body: { name: 'Free money' } }), 201).id
    const second = expectOk(await t.request('POST', '/v1/networks', { key: spammer.key, body: { name: 'Free money again' } }), 201).id
    expectOk(await t.request('POST', `/v1/networks/${first}/members`, { key: spammer.key, body: { org_id: target.orgId } }), 201)
    // block only with the caller's own org_id
    expectError(
      await t.request('DELETE', `/v1/networks/${first}/members/${target.orgId}?block=true`, { key: spammer.key }),
      400,
      'validation_error',
      /^block: /,
    )
    expect(expectOk(await t.request('DELETE', `/v1/networks/${first}/members/${target.orgId}?block=true`, { key: target.key }))).toEqual({
      org_id: target.orgId,
      removed: true,
    })
    expect(expectOk(await t.request('GET', '/v1/networks', { key: target.key }))).toEqual([])
    const blocks = expectOk(await t.request('GET', '/v1/networks/invitation-blocks', { key: target.key }))
    expect(blocks.map((b: { org_id: string }) => b.org_id)).toEqual([spammer.orgId])
    // from any of the blocked organization's networks: the same answer as an id that does not exist
    const blocked = await t.request('POST', `/v1/networks/${second}/members`, { key: spammer.key, body: { org_id: target.orgId } })
    const unknown = await t.request('POST', `/v1/networks/${second}/members`, { key: spammer.key, body: { org_id: crypto.randomUUID() } })
    expectError(blocked, 404, 'not_found')
    expect(blocked.body).toEqual(unknown.body)
    expect(expectOk(await t.request('GET', '/v1/networks', { key: target.key }))).toEqual([])
    // others still invite it
    const friend = await createOrg()
    const friendly = expectOk(await t.request('POST', '/v1/networks', { key: friend.key, body: { name: 'Friends' } }), 201).id
    expectOk(await t.request('POST', `/v1/networks/${friendly}/members`, { key: friend.key, body: { org_id: target.orgId } }), 201)
    // lifted: the inviter may invite again
    expect(expectOk(await t.request('DELETE', `/v1/networks/invitation-blocks/${spammer.orgId}`, { key: target.key }))).toEqual({
      org_id: spammer.orgId,
      unblocked: true,
    })
    expectError(await t.request('DELETE', `/v1/networks/invitation-blocks/${spammer.orgId}`, { key: target.key }), 404, 'not_found')
    expectOk(await t.request('POST', `/v1/networks/${second}/members`, { key: spammer.key, body: { org_id: target.orgId } }), 201)
  })

  test('an organization sends at most INVITATIONS_PER_MINUTE invitations a minute: then 429 rate_limit_exceeded with Retry-After', async () => {
    const sender = await createOrg()
    const network = expectOk(await t.request('POST', '/v1/networks', { key: sender.key, body: { name: 'Wide' } }), 201).id
    const invitees = await Promise.all(Array.from({ length: INVITATIONS_PER_MINUTE + 1 }, () => createOrg()))
    const statuses: number[] = []
    for (const invitee of invitees)
      statuses.push((await t.request('POST', `/v1/networks/${network}/members`, { key: sender.key, body: { org_id: invitee.orgId } })).status)
    expect(statuses.slice(0, INVITATIONS_PER_MINUTE).every(s => s === 201)).toBe(true)
    const refused = await t.request('POST', `/v1/networks/${network}/members`, { key: sender.key, body: { org_id: (await createOrg()).orgId } })
    expectError(refused, 429, 'rate_limit_exceeded', /^network invitations: /)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
  })
})

describe('isolation', () => {
  test('another organization sees none of it: 404 for the network, its members, directory and admission', async () => {
    expect(expectOk(await t.request('GET', '/v1/networks', { key: stranger.key }))).toEqual([])
    expectError(await t.request('GET', `/v1/networks/${networkId}`, { key: stranger.key }), 404, 'not_found')
    expectError(await t.request('GET', `/v1/networks/${networkId}/members`, { key: stranger.key }), 404, 'not_found')
    expectError(await t.request('GET', `/v1/networks/${networkId}/agents`, { key: stranger.key }), 404, 'not_found')
    expectError(await t.request('PATCH', `/v1/networks/${networkId}`, { key: stranger.key, body: { name: 'mine' } }), 404, 'not_found')
    expectError(await t.request('DELETE', `/v1/networks/${networkId}`, { key: stranger.key }), 404, 'not_found')
  })
})

describe('leaving and removal', () => {
  test('a member leaves by removing itself; the directory closes to it and its grants are denied', async () => {
    expectOk(await t.request('DELETE', `/v1/networks/${networkId}/members/${member.orgId}`, { key: member.key }))
    expectError(await t.request('GET', `/v1/networks/${networkId}/agents`, { key: member.key }), 404, 'not_found')
    const [contact] = expectOk(await t.request('GET', `/v1/contacts?owner_address=${memberAgent}`, { key: member.key }))
    expect(contact.send_grant).toBe('denied')
  })

  test('the owner removes a member and deletes the network', async () => {
    const other = await createOrg()
    expectOk(await t.request('POST', `/v1/networks/${networkId}/members`, { key: owner.key, body: { org_id: other.orgId } }), 201)
    expectOk(await t.request('DELETE', `/v1/networks/${networkId}/members/${other.orgId}`, { key: owner.key }))
    expect(expectOk(await t.request('GET', '/v1/networks', { key: other.key }))).toEqual([])
    expectOk(await t.request('DELETE', `/v1/networks/${networkId}`, { key: owner.key }))
    expectError(await t.request('GET', `/v1/networks/${networkId}`, { key: owner.key }), 404, 'not_found')
  })
})
