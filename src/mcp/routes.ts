/**
 * POST /mcp: the remote MCP server, stateless Streamable HTTP, served by the v2 SDK's
 * `createMcpHandler`, which answers the 2026-07-28 revision (one envelope per request) and, in
 * its stateless legacy leg, the 2025-11-25 one, from one factory (see docs/mcp.md). Before the
 * SDK sees a request this route checks the Origin (DNS rebinding), the bearer (API key,
 * connection key, or an OAuth access token issued for this resource) and the scope of each tool
 * called; the SDK does no authentication of its own.
 */
import { Elysia } from 'elysia'
import { createMcpHandler, type AuthInfo } from '@modelcontextprotocol/server'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { authenticateRequest } from '../http/auth'
import { requestFacts } from '../request-context'
import { hasScope, mcpServer, scopeOf, TOOLS } from './server'
import { FULL_SCOPE, READ_SCOPE } from './server'

export const MCP_PATH = '/mcp'
/** The RFC 8707 resource identifier of the MCP server: OAuth tokens for it carry it as their audience. */
export const mcpResource = (ctx: AppContext) => `${ctx.config.PUBLIC_URL}${MCP_PATH}`
/** RFC 9728 section 3.1: the metadata of `https://host/mcp` lives at the path-inserted well-known URL. */
export const mcpResourceMetadataUrl = (ctx: AppContext) => `${ctx.config.PUBLIC_URL}/.well-known/oauth-protected-resource${MCP_PATH}`

const jsonRpcError = (status: number, code: number, message: string) =>
  Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status, headers: { 'cache-control': 'no-store' } })

/** The first tool a JSON-RPC message (or batch) calls that the credential's scopes do not cover. */
function scopeShortfall(auth: Auth, messages: unknown): { tool: string; scope: string } | null {
  for (const m of Array.isArray(messages) ? messages : [messages]) {
    const call = m as { method?: unknown; params?: { name?: unknown } }
    if (call?.method !== 'tools/call' || typeof call.params?.name !== 'string') continue
    const tool = TOOLS.find(t => t.name === call.params!.name)
    if (tool && !hasScope(auth, scopeOf(tool))) return { tool: tool.name, scope: scopeOf(tool) }
  }
  return null
}

export function mcpRoutes(ctx: AppContext) {
  const auths = new WeakMap<Request, Auth>()
  const handler = createMcpHandler(({ requestInfo }) => mcpServer(ctx, auths.get(requestInfo!)!), {
    legacy: 'stateless',
    maxRequestBodySize: ctx.config.MAX_BODY_BYTES,
    onerror: () => {},
  })
  const origins = new Set([new URL(ctx.config.PUBLIC_URL).origin, new URL(ctx.config.siteUrl).origin])
  const metadata = {
    resource: mcpResource(ctx),
    resource_name: 'Agent mail MCP server',
    authorization_servers: [ctx.config.PUBLIC_URL],
    bearer_methods_supported: ['header'],
    scopes_supported: [FULL_SCOPE, READ_SCOPE],
    resource_documentation: `${ctx.config.siteUrl}/docs/mcp`,
  }

  async function serve(request: Request, body: unknown, set: { headers: Record<string, string | number | string[]> }, server: unknown): Promise<Response> {
    // A browser page of another site must not drive a local or remote MCP server (DNS rebinding).
    const origin = request.headers.get('origin')
    if (origin && !origins.has(origin)) return jsonRpcError(403, -32000, `Origin ${origin} is not allowed`)
    const auth = await authenticateRequest(ctx, request, set, server as never, {
      resource: mcpResource(ctx),
      resourceMetadata: mcpResourceMetadataUrl(ctx),
      routeScope: false,
    })
    let parsedBody: unknown
    if (request.method === 'POST') {
      // The edge (http/boundary.ts) hands a route with its own parser JSON already parsed and
      // checked, and text that is not JSON as text: that is the protocol's parse error.
      if (body === undefined || typeof body === 'string') return jsonRpcError(400, -32700, 'Parse error: the body is not JSON')
      parsedBody = body
      const short = scopeShortfall(auth, parsedBody)
      if (short) {
        return Response.json(
          { success: false, error: { code: 'forbidden', message: `${short.tool}: needs the ${short.scope} scope`, details: { required_scope: short.scope } } },
          {
            status: 403,
            headers: {
              'www-authenticate': `Bearer error="insufficient_scope", scope="${short.scope}", resource_metadata="${mcpResourceMetadataUrl(ctx)}", error_description="${short.tool} needs ${short.scope}"`,
            },
          },
        )
      }
    }
    auths.set(request, auth)
    const authInfo: AuthInfo = {
      token: 'redacted',
      clientId: auth.keyId,
      scopes: auth.scopes ?? [FULL_SCOPE],
      resource: new URL(mcpResource(ctx)),
      resourceMetadataUrl: mcpResourceMetadataUrl(ctx),
    }
    const response = await handler.fetch(request, { authInfo, ...(parsedBody !== undefined && { parsedBody }) })
    requestFacts(request).status = response.status
    return response
  }

  return (
    new Elysia({ tags: ['MCP'] })
      .get(
        '/.well-known/oauth-protected-resource/mcp',
        () => Response.json(metadata, { headers: { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=300' } }),
        {
          detail: { summary: 'RFC 9728 protected-resource metadata of the MCP server', security: [] },
        },
      )
      // ALL: the SDK answers each method (POST messages, 405 to a GET stream or DELETE of a session,
      // which a stateless server has none of); and MCP stays out of the REST OpenAPI document,
      // tools/list describes it
      .all(MCP_PATH, ({ request, body, set, server }) => serve(request, body, set, server), { parse: 'text' })
  )
}
