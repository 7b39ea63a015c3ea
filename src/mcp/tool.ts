/**
 * What an MCP tool is here: one REST operation of the service, offered to models, made from its
 * declaration (mcp/operation-tools.ts). Each tool names that operation (`rest`), so a connection
 * key sees and may call exactly the tools whose REST operations its allow-list permits
 * (src/http/credential-scope.ts). Schemas are TypeBox, published as JSON Schema.
 */
import type { Static, TObject } from '@sinclair/typebox'
import type { Method, OperationCall, ToolHints } from '../http/operation'

export interface Tool<I extends TObject = TObject, O extends TObject = TObject> {
  name: string
  title: string
  description: string
  input: I
  output: O
  annotations: ToolHints
  /** the REST operation this tool is (an Elysia-style path), whose permissions it shares */
  rest: { method: Method; path: string }
  handle(call: OperationCall, args: Static<I>): Promise<Static<O>>
}
