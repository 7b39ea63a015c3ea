/** Per-request facts the lifecycle hooks share: the request id, start time and final status; what the listener knows of a request. */
import { randomUUIDv7 } from 'bun'

export interface RequestFacts {
  id: string
  startedAt: number
  status?: number
  orgId?: string
  /** the handler returned a Page: its data and meta go into the envelope side by side */
  paged?: boolean
  /** the request's reads went to the read replica (http/read-routing.ts); the request's log line says so */
  onReplica?: boolean
  /** run once the response is out, whatever it was (http/read-routing.ts notes there that a write ended) */
  finished?: (() => void)[]
}

const facts = new WeakMap<Request, RequestFacts>()

export function beginRequest(request: Request): RequestFacts {
  const f: RequestFacts = { id: `req_${randomUUIDv7('buffer').toString('hex')}`, startedAt: performance.now() }
  facts.set(request, f)
  return f
}

export function requestFacts(request: Request): RequestFacts {
  return facts.get(request) ?? beginRequest(request)
}

/**
 * What the listener (http/serve.ts) knows of a request: the peer address of its connection, and
 * its body when read whole before the Request was made (it is also the Request's body: the body
 * parser takes it from here instead of streaming the same bytes again).
 */
interface Listened {
  address: string
  body?: Uint8Array
}

const listened = new WeakMap<Request, Listened>()

export function noteListened(request: Request, what: Listened): void {
  listened.set(request, what)
}

export function clientSocketAddress(request: Request): string | undefined {
  return listened.get(request)?.address
}

export function wholeBodyOf(request: Request): Uint8Array | undefined {
  return listened.get(request)?.body
}
