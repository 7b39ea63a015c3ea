/**
 * The changes feed pushed: `GET /v1/events/stream` as Server-Sent Events. A stream is the
 * long-poll of `GET /v1/changes` kept open: each event carries the feed's cursor after it as its
 * `id`, so a client that reconnects with `Last-Event-ID` resumes exactly after the last event it
 * got (nothing lost, nothing repeated).
 *
 * Cost: an open stream is its place in this process's set and one `Waiter` (src/events.ts),
 * woken only by changes of its organization (of its address, when confined to one). No timer per
 * stream: one tick of the process writes the heartbeats of all of them, and, without LISTEN
 * (the embedded database), wakes them to read again since not every writer signals in-process.
 */
import type { AppContext } from '../context'
import { perProcess } from '../context'
import { errors } from '../errors'
import { log } from '../log'
import { type MailEvents, mailEvents, type Waiter } from '../events'
import { encodeCursor, presentChange, readFeed } from './feed'
import type { FeedFilter } from './queries'
import { UNSIGNALLED_REREAD_MS } from './model'

/** A comment line goes to every open stream this often, so proxies and clients see it alive. */
export const HEARTBEAT_MS = 15_000
/** Changes read (and written to the stream) at a time. */
const BATCH = 100
/** What a client told to retry waits before reconnecting, in ms (the SSE `retry:` field). */
const RETRY_MS = 1000

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(': heartbeat\n\n')

interface OpenStream {
  orgId: string
  waiter: Waiter
  controller?: ReadableStreamDefaultController<Uint8Array>
  closed: boolean
}

export interface StreamOptions {
  orgId: string
  /** the seq after which to send; null: from the earliest retained */
  after: number | null
  filter: FeedFilter
  /** the most streams the organization may hold open in this process */
  cap: number
  /** the request's: aborted when the client goes away */
  signal: AbortSignal
}

/** This process's open event streams: their count per organization, the shared tick, the end at shutdown. */
export class EventStreams {
  private readonly open = new Set<OpenStream>()
  private readonly perOrg = new Map<string, number>()
  private tick: ReturnType<typeof setInterval> | undefined
  private lastBeat = 0
  /** set by `endAll()`: the process is stopping, and no stream opens any more */
  ending = false

  constructor(
    private readonly events: MailEvents,
    private readonly heartbeatMs = HEARTBEAT_MS,
  ) {}

  /** How many streams are open in this process. */
  get size(): number {
    return this.open.size
  }

  /**
   * Opens a stream of `orgId`'s changes after seq `after` that pass `filter`: a 429 past `cap`
   * streams of the organization in this process. The first read happens before it answers,
   * so a bad or expired cursor is an error response, not a broken stream.
   */
  async stream(ctx: AppContext, opts: StreamOptions): Promise<Response> {
    const { orgId, filter, cap, signal } = opts
    let after = opts.after
    if (this.ending) throw errors.retryLater('rate_limited', 'events stream: the server is stopping; reconnect with Last-Event-ID', 1)
    const count = this.perOrg.get(orgId) ?? 0
    if (count >= cap)
      throw errors.retryLater('rate_limited', `events stream: at most ${cap} open streams per organization; close one, or read GET /v1/changes`, 5, {
        details: { limit: cap },
      })
    // registered before the first read, so a change committed meanwhile still wakes it
    const s: OpenStream = { orgId, waiter: this.events.subscribeChanges(orgId, filter.address ?? undefined), closed: false }
    this.perOrg.set(orgId, count + 1)
    this.open.add(s)
    this.startTick()
    signal.addEventListener('abort', () => this.finish(s), { once: true })
    let first: Uint8Array
    try {
      first = encoder.encode(`retry: ${RETRY_MS}\n\n${await this.read(ctx, s, after, filter).then(r => ((after = r.next), r.text))}`)
    } catch (error) {
      this.close(s)
      throw error
    }
    const body = new ReadableStream<Uint8Array>(
      {
        start: controller => {
          s.controller = controller
          controller.enqueue(first)
        },
        // called when the client has taken what was written: read on, or wait for a change
        pull: async controller => {
          try {
            for (;;) {
              if (s.closed || this.events.ending) return this.finish(s)
              s.waiter.take()
              const { text, next } = await this.read(ctx, s, after, filter)
              after = next
              if (s.closed) return
              if (text) return controller.enqueue(encoder.encode(text))
              await s.waiter.next()
            }
          } catch (error) {
            // the client reconnects with Last-Event-ID and misses nothing
            log.warn('events stream: ended by a failed read', { error })
            this.finish(s)
          }
        },
        cancel: () => this.close(s),
      },
      { highWaterMark: 1 },
    )
    return new Response(body, {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
    })
  }

  /** The events of the next changes after `after`, as SSE text ('' when none), and where to resume. */
  private async read(ctx: AppContext, s: OpenStream, after: number | null, filter: FeedFilter): Promise<{ text: string; next: number }> {
    const page = await readFeed(ctx, s.orgId, after, BATCH, filter, false)
    let text = ''
    for (const change of page.changes)
      text += `id: ${encodeCursor(ctx, s.orgId, Number(change.seq))}\nevent: ${change.type}\ndata: ${JSON.stringify(presentChange(change))}\n\n`
    return { text, next: page.next }
  }

  /** Closes the stream's body (the client sees it end) and frees its place. */
  private finish(s: OpenStream) {
    const open = !s.closed
    this.close(s)
    if (open)
      try {
        s.controller?.close()
      } catch {
        // already closed or errored by its reader
      }
  }

  /** Frees the stream's place and wakes its pending read, which then returns. */
  private close(s: OpenStream) {
    if (s.closed) return
    s.closed = true
    s.waiter.end()
    s.waiter.close()
    this.open.delete(s)
    const left = (this.perOrg.get(s.orgId) ?? 1) - 1
    if (left > 0) this.perOrg.set(s.orgId, left)
    else this.perOrg.delete(s.orgId)
    if (!this.open.size) this.stopTick()
  }

  private startTick() {
    if (this.tick) return
    this.lastBeat = Date.now()
    // without LISTEN only some writers signal in-process: the tick also makes every stream read again
    const every = this.events.listening ? this.heartbeatMs : Math.min(UNSIGNALLED_REREAD_MS, this.heartbeatMs)
    this.tick = setInterval(() => this.onTick(), every)
    this.tick.unref?.()
  }

  private stopTick() {
    clearInterval(this.tick)
    this.tick = undefined
  }

  private onTick() {
    const beat = Date.now() - this.lastBeat >= this.heartbeatMs
    if (beat) this.lastBeat = Date.now()
    for (const s of this.open) {
      if (!this.events.listening) s.waiter.wake()
      if (beat && s.controller && (s.controller.desiredSize ?? 0) > 0) s.controller.enqueue(HEARTBEAT)
    }
  }

  /** Ends every stream, now and from now on (shutdown): clients reconnect elsewhere with Last-Event-ID. */
  endAll() {
    this.ending = true
    for (const s of [...this.open]) this.finish(s)
  }
}

/** This process's event streams. */
export const eventStreams = perProcess(ctx => new EventStreams(mailEvents(ctx)))
