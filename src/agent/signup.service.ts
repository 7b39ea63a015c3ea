/**
 * Agent signup: an email-verified agent gets an OAuth token set (client_id agent). A new address
 * becomes a person without a password, owner of a new organization on the agent plan with a
 * managed inbox. An existing person's agent joins one of their workspaces instead: the one named
 * by org_id (403 if they are not a member), or their only one; several without org_id, or none,
 * is 409 conflict, and the signup stays open for another verify.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { errors } from '../errors'
import { addMember } from '../account/membership-queries'
import { insertOrg } from '../account/org-queries'
import { insertUser, lockUserByEmail } from '../account/user-queries'
import { completeSignup } from '../signups/service'
import type { SignupRow } from '../signups/queries'
import { createManagedInbox, presentInbox } from '../inboxes/service'
import { FIRST_PARTY_CLIENTS, issueFirstPartyTokens } from '../oauth/first-party'
import { membershipsOf } from '../account/membership-queries'

export async function completeAgentSignup(ctx: AppContext, tx: Tx, signup: SignupRow, orgId: string | undefined) {
  await completeSignup(tx, signup.id)
  const existing = await lockUserByEmail(tx, signup.email)
  let userId: string
  let chosen: string
  let inbox = null
  if (!existing) {
    if (orgId !== undefined) throw errors.forbidden('org_id: not a workspace of this account (the address has no account yet; omit org_id)')
    userId = randomUUIDv7()
    await insertUser(tx, { id: userId, email: signup.email })
    chosen = await insertOrg(tx, { name: `Agent workspace (${signup.device_name ?? signup.email})`, plan: 'agent' })
    await addMember(tx, chosen, userId, 'owner')
    inbox = presentInbox(await createManagedInbox(tx, chosen, ctx.config.MANAGED_DOMAIN))
  } else {
    userId = existing.id
    const orgs = await membershipsOf(tx, userId)
    if (orgId !== undefined) {
      if (!orgs.some(o => o.org_id === orgId)) throw errors.forbidden('org_id: not a workspace of this account')
      chosen = orgId
    } else if (orgs.length === 1) {
      chosen = orgs[0]!.org_id
    } else if (orgs.length === 0) {
      throw errors.conflict('this account is not a member of any workspace, so an agent cannot join one; ask an owner for an invitation', {
        reason: 'no_usable_workspace',
      })
    } else {
      throw errors.conflict('this account has several workspaces: verify again with org_id set to one of details.orgs', {
        reason: 'org_selection_required',
        orgs: orgs.map(o => ({ org_id: o.org_id, name: o.name, role: o.role })),
      })
    }
  }
  const { grantId: _grant, ...tokens } = await issueFirstPartyTokens(tx, FIRST_PARTY_CLIENTS.agent, userId, chosen)
  return { ...tokens, org_id: chosen, user_id: userId, inbox }
}
