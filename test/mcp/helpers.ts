/** An MCP client of the official SDK (v2 client package) talking to the app in-process over its fetch. */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { TestApp } from '../helpers/app'

export type Era = 'modern' | 'legacy'
export const ERAS: { era: Era; version: string }[] = [
  { era: 'modern', version: '2026-07-28' },
  { era: 'legacy', version: '2025-11-25' },
]

let ipCounter = 0

/** The app's fetch, for the SDK transport: requests go through app.handle, from a client address of their own. */
export function appFetch(t: TestApp, ip = `203.0.113.${(ipCounter = (ipCounter % 250) + 1)}`) {
  return async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input instanceof URL ? input.href : (input as string), init)
    request.headers.set('x-forwarded-for', ip)
    return t.app.handle(request)
  }
}

export async function mcpClient(t: TestApp, bearer: string, era: Era): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('http://api.test.local/mcp'), {
    fetch: appFetch(t),
    requestInit: { headers: { authorization: `Bearer ${bearer}` } },
  })
  const client = new Client(
    { name: 'agent-mail-tests', version: '1.0.0' },
    { versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' } },
  )
  await client.connect(transport)
  return client
}

/** The v1 error object a failed tool result carries as its text (errors have no structuredContent). */
export function toolErrorOf(result: unknown): { code: string; message: string; details?: any; gates?: unknown[] } {
  const r = result as { isError?: boolean; structuredContent?: unknown; content: { type: string; text: string }[] }
  if (!r.isError) throw new Error(`not an error result: ${r.content[0]?.text}`)
  if (r.structuredContent !== undefined) throw new Error('an error result must not carry structuredContent')
  const body = JSON.parse(r.content[0]!.text) as { success: false; error: { code: string; message: string } }
  if (body.success !== false) throw new Error(`not an error envelope: ${r.content[0]!.text}`)
  return body.error
}
