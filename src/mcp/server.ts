/**
 * The MCP server of one request: a fresh McpServer holding the tools the caller may use, built
 * by the SDK's handler for every HTTP request (stateless; nothing outlives the request). The
 * JSON Schemas and their validators are prepared once per process.
 */
import type { TSchema } from '@sinclair/typebox'
import { Value, ValueErrorType } from '@sinclair/typebox/value'
import { fromJsonSchema, McpServer, type CallToolResult, type StandardSchemaWithJSON } from '@modelcontextprotocol/server'
import pkg from '../../package.json'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { credentialMayCall } from '../http/credential-scope'
import { ApiError } from '../errors'
import { fieldName, reasonOf } from '../http/validation'
import { toApiError } from '../http/render-error'
import { log } from '../log'
import { READ_SCOPE, SCOPE as FULL_SCOPE } from '../oauth/constants'
import { jsonSchema } from './schema'
import type { Tool } from './tool'
import { OPERATIONS } from '../operations'
import { operationTools } from './operation-tools'

/** Every tool, in one deterministic order (by name), whoever asks. */
export const TOOLS: readonly Tool[] = operationTools(OPERATIONS).sort((a, b) => a.name.localeCompare(b.name))

/** The scope a tool needs: reads are allowed to read-only tokens, everything else needs the full scope. */
export { SCOPE as FULL_SCOPE, READ_SCOPE } from '../oauth/constants'
export const scopeOf = (tool: Tool) => (tool.annotations.readOnlyHint ? READ_SCOPE : FULL_SCOPE)
export function hasScope(auth: Auth, scope: string): boolean {
  const granted = auth.scopes ?? [FULL_SCOPE]
  return granted.includes(FULL_SCOPE) || granted.includes(scope)
}

/**
 * The input schema as published, without the SDK's own validation: the handler validates with
 * TypeBox, so that a bad argument is a tool error carrying `validation_error` and a
 * `field: reason` message like the REST API's, not an SDK message without a code.
 */
function published(schema: Record<string, unknown>): StandardSchemaWithJSON {
  return {
    '~standard': {
      version: 1,
      vendor: 'agent-mail',
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: () => schema, output: () => schema },
    },
  } as StandardSchemaWithJSON
}

interface Prepared {
  tool: Tool
  input: StandardSchemaWithJSON
  /** validated by the SDK before a result leaves: our answers match what we publish */
  output: StandardSchemaWithJSON
}

const prepared: Prepared[] = TOOLS.map(tool => ({ tool, input: published(jsonSchema(tool.input)), output: fromJsonSchema(jsonSchema(tool.output)) }))

/** Whether this caller sees and may call the tool: what the credential may call of the REST operation it is. */
export const mayUse = (auth: Auth, tool: Tool) => credentialMayCall(auth, tool.rest.method, tool.rest.path)

/** The arguments' problems the way the REST API words a body's: `field: reason`, missing fields once. */
export function validationError(input: TSchema, args: unknown): ApiError | null {
  const issues = [...Value.Errors(input, args)]
  if (!issues.length) return null
  const missing = new Set(issues.filter(i => i.type === ValueErrorType.ObjectRequiredProperty).map(i => i.path))
  const relevant = issues.filter(i => !missing.has(i.path) || i.type === ValueErrorType.ObjectRequiredProperty)
  return new ApiError('validation_error', [...new Set(relevant.map(i => `${fieldName('arguments', i.path)}: ${reasonOf(i)}`))].join('; '))
}

/**
 * An error as a tool result: the v1 error object as text only. Stock clients (the v1 SDK's
 * callTool) check any structuredContent against the tool's output schema even on errors, and
 * the error envelope is not the tool's output, so a structured error would reach them as -32602.
 */
export function toolError(error: ApiError, siteUrl: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(error.toBody(siteUrl)) }] }
}

export function mcpServer(ctx: AppContext, auth: Auth): McpServer {
  const server = new McpServer(
    { name: 'agent-mail', title: 'Agent mail', version: pkg.version },
    {
      instructions:
        'Email for agents: inboxes, reading mail (get_email gives attachments as short-lived download URLs), wait_for_email to block until mail arrives, ' +
        'and send_email / reply_to_email / forward_email, which need an idempotency_key: retrying with the same key never sends twice. ' +
        'Errors are results with isError whose text is the JSON {success: false, error: {code, message}}; branch on error.code (validation_error, not_found, forbidden, rate_limited, ...).',
    },
  )
  for (const { tool, input, output } of prepared) {
    if (!mayUse(auth, tool)) continue
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: input, outputSchema: output, annotations: { title: tool.title, ...tool.annotations } },
      async (args: unknown, extra: { mcpReq: { signal: AbortSignal } }): Promise<CallToolResult> => {
        const started = performance.now()
        try {
          const invalid = validationError(tool.input, args ?? {})
          if (invalid) throw invalid
          const result = (await tool.handle({ ctx, auth, signal: extra.mcpReq.signal }, (args ?? {}) as never)) as Record<string, unknown>
          return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result }
        } catch (error) {
          const apiError = toApiError('UNKNOWN', error, new Request(`${ctx.config.PUBLIC_URL}/mcp`), '/mcp')
          if (apiError.status >= 500) log.error('mcp tool failed', { tool: tool.name, org_id: auth.orgId, error })
          return toolError(apiError, ctx.config.siteUrl)
        } finally {
          log.info('mcp tool', { tool: tool.name, org_id: auth.orgId, duration_ms: Math.round((performance.now() - started) * 100) / 100 })
        }
      },
    )
  }
  return server
}
