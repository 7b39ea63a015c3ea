/**
 * What an MCP tool is here: one REST operation of the service, offered to models. Each tool
 * names that operation (`rest`), so a connection key sees and may call exactly the tools whose
 * REST operations its allow-list permits (src/http/credential-scope.ts); its handler calls the
 * same service function as the route. Schemas are TypeBox, published as JSON Schema.
 */
import type { Static, TObject } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'

export interface ToolAnnotations {
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

export interface ToolCall {
  ctx: AppContext
  auth: Auth
  /** aborted when the client goes away */
  signal: AbortSignal
}

export interface Tool<I extends TObject = TObject, O extends TObject = TObject> {
  name: string
  title: string
  description: string
  input: I
  output: O
  annotations: ToolAnnotations
  /** the REST operation this tool is (an Elysia-style path), whose permissions it shares */
  rest: { method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'; path: string }
  handle(call: ToolCall, args: Static<I>): Promise<Static<O>>
}

/** Keeps the input and output types of one tool together. */
export const tool = <I extends TObject, O extends TObject>(t: Tool<I, O>): Tool => t as unknown as Tool

/** Annotation presets: reads touch nothing; writes say whether a repeat is harmless. */
export const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
export const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
