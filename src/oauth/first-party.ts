/**
 * Token sets for the service's own clients (sql/0008_identity.sql registers them): the CLI login,
 * the CLI signup and the agent signup end in the same grant and token pair as the authorization
 * code flow, and the tokens refresh and revoke at /oauth/* like any other.
 */
import type { Tx } from '../db/client'
import { createGrant, issueTokens, type TokenSet } from './grants'

export const FIRST_PARTY_CLIENTS = { cli: 'cli', agent: 'agent' } as const
export type FirstPartyClient = (typeof FIRST_PARTY_CLIENTS)[keyof typeof FIRST_PARTY_CLIENTS]

export const isFirstPartyClient = (id: string): boolean => (Object.values(FIRST_PARTY_CLIENTS) as string[]).includes(id)

/** A new grant of `client` for the person in the organization, and its first token pair. */
export async function issueFirstPartyTokens(tx: Tx, client: FirstPartyClient, userId: string, orgId: string): Promise<TokenSet & { grantId: string }> {
  const grantId = await createGrant(tx, { clientId: client, userId, orgId })
  return { ...(await issueTokens(tx, grantId)), grantId }
}
