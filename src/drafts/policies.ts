/**
 * Approval policies: per sender address (a managed inbox, or an address at a verified domain;
 * a connection key's sends are those of its bound address), whether its sends wait for an
 * owner's or admin's approval. Only an owner or admin sets or lifts one, so an agent cannot turn
 * off the approval its own mail waits for.
 */
import type { AppContext } from '../context'
import type { Auth } from '../auth/principal'
import type { PageRequest } from '../http/pagination'
import { errors } from '../errors'
import { ADDRESS } from '../http/schema'
import { requireSender } from '../sending/senders'
import type { PolicyInput } from './model'
import { presentPolicy } from './present'
import { deletePolicy, listPolicyRows, policyFor, upsertPolicy } from './queries'
import { requireApprover } from './service'

const ADDRESS_PATTERN = new RegExp(ADDRESS)

function addressOf(raw: string): string {
  const address = raw.trim().toLowerCase()
  if (!ADDRESS_PATTERN.test(address) || address.length > 320) throw errors.validation('address', 'must be an email address')
  return address
}

export async function getPolicy(ctx: AppContext, auth: Auth, raw: string) {
  const address = addressOf(raw)
  return presentPolicy(address, await policyFor(ctx.sql, auth.orgId, address))
}

export const listPolicies = (ctx: AppContext, auth: Auth, page: PageRequest) => listPolicyRows(ctx.sql, auth.orgId, page)

/** Sets (approval_required true) or lifts (false) the policy of one of the organization's sender addresses. */
export async function setPolicy(ctx: AppContext, auth: Auth, raw: string, input: PolicyInput) {
  const address = addressOf(raw)
  await requireApprover(ctx, auth)
  if (!input.approval_required) {
    if (input.notify_email) throw errors.validation('notify_email', 'is only for a policy that requires approval')
    await deletePolicy(ctx.sql, auth.orgId, address)
    return presentPolicy(address, null)
  }
  await requireSender(ctx.sql, auth.orgId, address)
  return presentPolicy(address, await upsertPolicy(ctx.sql, auth.orgId, address, input.notify_email?.toLowerCase() ?? null, auth.userId))
}
