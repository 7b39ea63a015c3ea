/** RFC 8414 authorization server metadata. The issuer is PUBLIC_URL (the spec's {auth_url}). */
import type { Config } from '../config'
import { ACCESS_TOKEN_TTL_SECONDS, CODE_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, SCOPES } from './constants'

export function authorizationServerMetadata(config: Config) {
  const base = config.PUBLIC_URL
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    revocation_endpoint: `${base}/oauth/revoke`,
    registration_endpoint: `${base}/oauth/register`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    // RFC 9207: the authorization response carries `iss`, so clients can detect mix-up attacks
    authorization_response_iss_parameter_supported: true,
    // an https client_id naming its own metadata document is accepted in place of registration
    client_id_metadata_document_supported: true,
    service_documentation: `${config.siteUrl}/docs`,
    authorization_code_expires_in: CODE_TTL_SECONDS,
    access_token_expires_in: ACCESS_TOKEN_TTL_SECONDS,
    refresh_token_expires_in: REFRESH_TOKEN_TTL_SECONDS,
  }
}
