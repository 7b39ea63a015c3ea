/**
 * Who a request acts for, whichever credential it presented (an API key, an OAuth access token,
 * an agent connection key): the types every resolver returns and every guard reads.
 */
import type { Plan } from '../account/plans'

export type Role = 'owner' | 'admin' | 'member'

export interface Auth {
  orgId: string
  keyId: string
  /** the person behind the credential; null for keys minted without one */
  userId: string | null
  /** that person's role in the organization when the credential was resolved */
  role: Role
  method: 'api_key' | 'oauth' | 'connection'
  /**
   * API keys only: the function whose runtime key (SERVICE_API_KEY) this is. Such a key may not
   * mint credentials (src/http/credential-scope.ts): they would outlive the function.
   */
  functionId?: string
  /** connection keys only: the one address the key acts for (lowercase) */
  boundAddress?: string
  plan: Plan
  apiPerMinute: number
  /** OAuth access tokens only: the resource (RFC 8707 audience) the token was issued for */
  resource?: string
  /** OAuth access tokens only: the scopes granted (service:api, or the read-only service:read) */
  scopes?: string[]
}
