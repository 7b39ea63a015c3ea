/** Per-request facts the lifecycle hooks share: the request id, start time and final status; what the listener knows of a request. */
import { randomUUIDv7 } from 'bun'

export interface RequestFacts {
  id: string
  startedAt: number
  status?: number
  orgId?: string
  /** the handler returned a Page: its data and meta go into the envelope side by side */
  paged?: boolean
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

const socketAddresses = new WeakMap<Request, string>()

/** The peer address of the connection a request came on, noted by the listener (http/serve.ts). */
export function setClientSocketAddress(request: Request, address: string): void {
  socketAddresses.set(request, address)
}

export function clientSocketAddress(request: Request): string | undefined {
  return socketAddresses.get(request)
}

const wholeBodies = new WeakMap<Request, Uint8Array>()

/**
 * The body of a request, read whole by the listener before the Request was made (it is also the
 * Request's body): the body parser takes it from here instead of streaming the same bytes again.
 */
export function setWholeBody(request: Request, bytes: Uint8Array): void {
  wholeBodies.set(request, bytes)
}

export function wholeBodyOf(request: Request): Uint8Array | undefined {
  return wholeBodies.get(request)
}
