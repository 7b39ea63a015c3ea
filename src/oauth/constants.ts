/** The fixed parameters of the authorization server (spec: Authentication rule 4 and 5, Limits). */

/** The one scope: full API access for the chosen organization. */
export const SCOPE = 'service:api'
/** Read-only access: only the read-only MCP tools (docs/mcp.md); the REST API needs SCOPE. */
export const READ_SCOPE = 'service:read'
export const SCOPES = [SCOPE, READ_SCOPE] as const

export const CODE_TTL_SECONDS = 10 * 60
export const ACCESS_TOKEN_TTL_SECONDS = 60 * 60
export const REFRESH_TOKEN_TTL_SECONDS = 90 * 24 * 60 * 60
/** How long the sign-in page of one authorization request stays usable. */
export const AUTHORIZATION_REQUEST_TTL_SECONDS = 15 * 60

/** Access tokens start with `svc_`, like API keys: clients treat every service credential alike. */
export const ACCESS_TOKEN_PREFIX = 'svc_oat_'
export const REFRESH_TOKEN_PREFIX = 'svc_ort_'
export const CODE_PREFIX = 'oac_'
export const CLIENT_ID_PREFIX = 'oc_'

export const MAX_REDIRECT_URIS = 20

/** Per client address, per minute. */
export const LIMITS = {
  token: 60,
  revoke: 60,
  register: 30,
  authorizePage: 120,
  signIn: 30,
  /** password attempts per email address, whatever the client address */
  signInPerEmail: 10,
} as const
