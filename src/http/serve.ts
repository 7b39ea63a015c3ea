/**
 * The HTTP listener of the api role: the Elysia app served through `node:http` rather than
 * `Bun.serve`, for two reasons found with raw sockets on Bun 1.4.5 (the newest release):
 *
 * - Pipelining. `Bun.serve` (uWS) closes the connection without a byte when a second
 *   HTTP/1.1 request arrives in the same read while the first one's handler is still awaiting
 *   (uWS `HttpContext::onData` closes the socket when `HTTP_RESPONSE_PENDING` is set: Bun
 *   issues #38128 and friends, not fixed in a release). Every route of ours awaits the
 *   database, so two requests in one packet got no answer at all. Bun's `node:http` server
 *   queues the second request and answers both in order.
 * - Slow clients. `Bun.serve` has only an idle timeout, which each trickled header byte
 *   resets, so a slow-loris client holds a connection forever; `node:http` exposes the
 *   connection, so a deadline for each request head can be kept here (Bun's `node:http` does
 *   not enforce `headersTimeout` itself).
 *
 * The cost, measured by `make bench` (HTTP section: the same JSON from a bare node:http and a
 * bare Bun.serve, under wrk): 0.46 to 0.91 of Bun.serve's requests per second on the loaded
 * 2-core machine; with the app behind it the listener is not what bounds a route (whoami spends
 * its CPU in the app: docs/benchmarks.md).
 */
import http from 'node:http'
import type { Socket } from 'node:net'
import { Readable } from 'node:stream'
import type { AnyElysia } from 'elysia'
import { connectionBudget, type ConnectionBudget } from '../connection-budget'
import { log } from '../log'
import { ApiError, errors } from '../errors'
import { noteListened } from '../request-context'

export interface HttpServerOptions {
  port: number
  hostname: string
  /** bodies past this are cut off before any handler sees them (each route has its own, smaller limit) */
  maxBodyBytes: number
  /**
   * A connection must deliver a complete request head within this many ms of opening, or of
   * its previous response ending; otherwise it is closed. Bounds slow-loris clients and idle
   * keep-alive connections alike.
   */
  headTimeoutMs?: number
  /**
   * The longest a request may take once its head is in, long-polls included: the listener never
   * cuts a request off before this (the api role derives it from the longest `wait`).
   */
  requestTimeoutMs?: number
  /** the connections this listener may hold, with the process's others (default: the process's budget, src/connection-budget.ts) */
  budget?: ConnectionBudget
}

export interface HttpServer {
  port: number
  /**
   * Stops accepting and closes idle connections; resolves once in-flight requests have
   * answered, or at once with `force`, which cuts them off (like Bun.serve's `stop(true)`).
   */
  stop(force?: boolean): Promise<void>
  /** the listener's own timeouts as set on it, in ms (0 = none): what may cut a request or a connection off */
  timeouts(): { request: number; socket: number; head: number }
}

export const HEAD_TIMEOUT_MS = 10_000
/** Without a longer one asked for: Node's default for `requestTimeout`. */
export const REQUEST_TIMEOUT_MS = 300_000

/** The answer to a connection past the budget (a 429 in the envelope), written before it is closed. */
const OVER_BUDGET = (() => {
  const error = errors.retryLater('rate_limited', 'too many connections to this server', 1)
  const body = JSON.stringify(error.toBody())
  const headers = { ...error.headers, connection: 'close', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
  return `HTTP/1.1 ${error.status} Too Many Requests\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n${body}`
})()

interface Connection {
  timer?: ReturnType<typeof setTimeout>
  active: number
}

/**
 * Bodies declared this short are read whole before the app sees them. Handing the app a web
 * stream over the node stream (`Readable.toWeb` and a counting `TransformStream`) cost more CPU
 * than the rest of the listener for a small JSON POST; longer and chunked bodies keep that
 * stream, so a route's own limit still refuses them as they arrive, before they are all read.
 */
export const WHOLE_BODY_BYTES = 64 * 1024

/** The body of a request declared short, once it is all in; undefined if the connection ends first. */
function wholeBody(req: http.IncomingMessage): Promise<Buffer | undefined> {
  return new Promise(resolve => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
    // after 'end' these change nothing: the promise is settled
    req.once('error', () => resolve(undefined))
    req.once('close', () => resolve(undefined))
  })
}

function streamedBody(req: http.IncomingMessage, maxBodyBytes: number): ReadableStream<Uint8Array> {
  let seen = 0
  return (Readable.toWeb(req) as ReadableStream<Uint8Array>).pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        seen += chunk.byteLength
        if (seen > maxBodyBytes) {
          req.destroy()
          out.error(new Error('request body over the server limit'))
        } else out.enqueue(chunk)
      },
    }),
  )
}

/** A GET or HEAD carrying a body anyway: no route reads it. */
const ignoredBody = (req: http.IncomingMessage) =>
  (req.method === 'GET' || req.method === 'HEAD') && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0)

/**
 * Reads and drops a body no route reads, before the answer. Closing a connection with bytes
 * still unread makes the kernel reset it, and a client that writes its whole request before it
 * reads (Connection: close, a body larger than the socket buffers) then loses the answer. At
 * most `limit` bytes: past it (declared, or as they arrive) the answer is 413 and the connection
 * closes unread.
 */
function discardBody(req: http.IncomingMessage, limit: number): Promise<'read' | 'too_large' | 'closed'> {
  if (req.headers['transfer-encoding'] === undefined && Number(req.headers['content-length']) > limit) return Promise.resolve('too_large')
  return new Promise(resolve => {
    let seen = 0
    req.on('data', (chunk: Buffer) => {
      seen += chunk.byteLength
      if (seen > limit) {
        req.pause()
        resolve('too_large')
      }
    })
    req.once('end', () => resolve('read'))
    // after 'end' these change nothing: the promise is settled
    req.once('error', () => resolve('closed'))
    req.once('close', () => resolve('closed'))
  })
}

/** The 413 for a body past the listener's limit, closing the connection: the rest of the body is not read. */
function tooLargeResponse(limit: number): Response {
  const error = new ApiError('payload_too_large', `body: must be at most ${limit} bytes`)
  return Response.json(error.toBody(), { status: error.status, headers: { connection: 'close' } })
}

/** The web Request for `req`, noted with what the listener knows of it; undefined when the client went away before its short body was in. */
async function requestOf(req: http.IncomingMessage, base: string, maxBodyBytes: number, abort: AbortController, address: string): Promise<Request | undefined> {
  const headers = new Headers()
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!)
  const method = req.method ?? 'GET'
  let body: ReadableStream<Uint8Array> | Buffer | undefined
  if (method !== 'GET' && method !== 'HEAD') {
    // Without transfer-encoding the parser delivers exactly content-length bytes (none without one).
    const declared = req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length'] ?? 0) : Infinity
    if (declared <= Math.min(WHOLE_BODY_BYTES, maxBodyBytes)) {
      body = await wholeBody(req)
      if (!body) return undefined
    } else body = streamedBody(req, maxBodyBytes)
  }
  const request = new Request(base + (req.url ?? '/'), { method, headers, body, signal: abort.signal, duplex: 'half' } as RequestInit)
  noteListened(request, { address, body: body instanceof Uint8Array ? body : undefined })
  return request
}

async function writeResponse(res: http.ServerResponse, response: Response, method: string) {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length) headers['set-cookie'] = cookies
  if (!response.body || method === 'HEAD') {
    res.writeHead(response.status, response.statusText || undefined, headers)
    res.end()
    return
  }
  // Every answer but an event stream is whole in memory already (JSON, a stored message): one
  // write with its length. Writing it chunk by chunk through the stream cost a third of the
  // CPU of a small JSON request (node:http's cork/uncork per write).
  if (!headers['content-type']?.toString().startsWith('text/event-stream')) {
    const bytes = await response.bytes()
    headers['content-length'] = String(bytes.byteLength)
    res.writeHead(response.status, response.statusText || undefined, headers)
    res.end(bytes)
    return
  }
  res.writeHead(response.status, response.statusText || undefined, headers)
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    if (!res.write(chunk)) await new Promise(resolve => res.once('drain', resolve))
  }
  res.end()
}

/** Serves `app` on `options.port` (0: any free port) until `stop()`. */
export async function serveHttp(app: AnyElysia, options: HttpServerOptions): Promise<HttpServer> {
  const headTimeoutMs = options.headTimeoutMs ?? HEAD_TIMEOUT_MS
  const budget = options.budget ?? connectionBudget
  const connections = new Map<Socket, Connection>()
  let stopping = false
  let origin = 'http://localhost'

  const arm = (socket: Socket, conn: Connection) => {
    clearTimeout(conn.timer)
    conn.timer = setTimeout(() => socket.destroy(), headTimeoutMs)
  }

  const server = http.createServer(async (req, res) => {
    const socket = req.socket
    const conn = connections.get(socket)
    if (conn) {
      clearTimeout(conn.timer)
      conn.active++
    }
    const abort = new AbortController()
    // the client went away before its answer: let long-polls and the like stop waiting
    res.once('close', () => {
      if (!res.writableFinished) abort.abort()
      if (conn && --conn.active === 0 && !socket.destroyed) {
        if (stopping) socket.destroy()
        else arm(socket, conn)
      }
    })
    try {
      if (ignoredBody(req)) {
        const discarded = await discardBody(req, options.maxBodyBytes)
        if (discarded === 'closed') return void res.destroy()
        if (discarded === 'too_large') return void (await writeResponse(res, tooLargeResponse(options.maxBodyBytes), req.method ?? 'GET'))
      }
      // Links are built from PUBLIC_URL, never from Host; a fixed origin also keeps Elysia's
      // router, which finds the path at index 11 onwards, away from a short or odd Host.
      const request = await requestOf(req, origin, options.maxBodyBytes, abort, socket.remoteAddress ?? 'local')
      // no one to answer: the connection closed before the body was in
      if (!request) return void res.destroy()
      await writeResponse(res, await app.handle(request), req.method ?? 'GET')
    } catch (error) {
      log.error('http: could not answer', { error })
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end(res.headersSent ? undefined : JSON.stringify({ success: false, error: { code: 'internal_error', message: 'internal error' } }))
    }
  })
  // Nothing of node:http's own may cut a request off before it is answered: no socket
  // inactivity timeout (a long-poll writes nothing while it waits), a request timeout at least
  // the longest a request may take. Idle connections are the head deadline's (above).
  server.timeout = 0
  server.requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS
  server.on('connection', (socket: Socket) => {
    if (stopping) return void socket.destroy()
    if (!budget.take()) {
      log.warn('http connection refused', { reason: 'too many connections', open: budget.used })
      return void socket.end(OVER_BUDGET)
    }
    const conn: Connection = { active: 0 }
    connections.set(socket, conn)
    arm(socket, conn)
    socket.once('close', () => {
      budget.release()
      clearTimeout(conn.timer)
      connections.delete(socket)
    })
  })
  server.on('clientError', (_error, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n')
    else socket.destroy()
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.hostname, () => resolve())
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : options.port
  origin = `http://localhost:${port}`

  return {
    port,
    timeouts: () => ({ request: server.requestTimeout, socket: server.timeout, head: headTimeoutMs }),
    async stop(force = false) {
      stopping = true
      const closed = new Promise<void>(resolve => server.close(() => resolve()))
      for (const [socket, conn] of connections) if (force || conn.active === 0) socket.destroy()
      await closed
    },
  }
}
