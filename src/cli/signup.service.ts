/**
 * `cli signup`: an email-verified account with a password, a new organization on the free plan
 * with the person as owner, a managed inbox, and the token set of a `cli` grant, all in one
 * transaction. An address that already has a password is an existing account (409: use login);
 * an address known without a password (an agent signup, an invitation) gets the password and
 * the new organization, since the code proved the mailbox.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { errors } from '../errors'
import { addMember } from '../account/membership-queries'
import { insertOrg } from '../account/org-queries'
import { insertUser, lockUserByEmail, setPassword } from '../account/user-queries'
import { completeSignup } from '../signups/service'
import type { SignupRow } from '../signups/queries'
import { createManagedInbox, presentInbox } from '../inboxes/service'
import { FIRST_PARTY_CLIENTS, issueFirstPartyTokens } from '../oauth/first-party'

export function defaultOrgName(signup: Pick<SignupRow, 'email' | 'name' | 'org_name'>): string {
  if (signup.org_name) return signup.org_name
  return `${signup.name ?? signup.email.split('@')[0]}'s organization`
}

/** Finishes a verified CLI signup; `passwordHash` is the argon2id hash of the chosen password. */
export async function completeCliSignup(ctx: AppContext, tx: Tx, signup: SignupRow, passwordHash: string) {
  await completeSignup(tx, signup.id)
  const existing = await lockUserByEmail(tx, signup.email)
  if (existing?.has_password) {
    throw errors.conflict('email: an account with this address exists; sign in with `login` instead', { reason: 'account_exists' })
  }
  let userId = existing?.id
  if (userId) await setPassword(tx, userId, passwordHash)
  else {
    userId = randomUUIDv7()
    await insertUser(tx, { id: userId, email: signup.email, passwordHash })
  }
  const orgId = await insertOrg(tx, { name: defaultOrgName(signup), plan: 'free' })
  await addMember(tx, orgId, userId, 'owner')
  const inbox = await createManagedInbox(tx, orgId, ctx.config.MANAGED_DOMAIN)
  const { grantId: _grant, ...tokens } = await issueFirstPartyTokens(tx, FIRST_PARTY_CLIENTS.cli, userId, orgId)
  return { ...tokens, org_id: orgId, user_id: userId, inbox: presentInbox(inbox) }
}
