/**
 * The per-message CPU work of received mail runs on a pool of worker threads (thread.ts), never
 * on the thread that serves SMTP and drives the database: the parse (postal-mime), the
 * authentication (SPF, DKIM, DMARC, ARC with mailauth) and the reply extraction (extract.ts).
 * One JavaScript thread doing all of it per message was the limit of the receiver (issue 28).
 *
 * DNS stays on this thread: a thread's lookups are questions posted here, answered by the
 * resolver the message was given (the context's, with its cache; the local relay's), and posted
 * back, matched by id.
 *
 * The reply extraction keeps a deadline per message. Its libraries read a reply with
 * backtracking regular expressions and repeated HTML parses whose cost grows faster than the
 * body: a crafted body of 20,000 characters took over a second (a line of "On On On …", ten
 * thousand `<br>`). A thread extracts one message at a time, after the message's parse and
 * authentication, and says when it takes one up; past EXTRACT_DEADLINE_MS from then, the
 * thread ends: that message gets its extracted fields null (its parse and authentication are
 * here already), and the other messages the thread held go to a new thread. Waiting for the
 * thread never counts, nor does its start.
 *
 * A thread that dies, or stops answering for HANG_MS (a parse that never ends), is replaced and
 * its messages fail: the SMTP client is answered 451 and sends again; nothing was acknowledged.
 */
import { availableParallelism } from 'node:os'
import { perProcess } from '../../context'
import type { RecordType, Resolver } from '../../dns/resolver'
import { log } from '../../log'
import type { AuthVerdicts } from './authenticate'
import type { ParsedMail } from './parse'

/** The new content of a message (extract.ts); null where the message has no such body, or it was not extracted. */
export interface Extracted {
  text: string | null
  html: string | null
}

export const NOT_EXTRACTED: Extracted = { text: null, html: null }

/** How long one message's extraction may take; replies take a few milliseconds (docs/extracted-text.md). */
export const EXTRACT_DEADLINE_MS = 500

/** How long a thread holding messages may go without a word (it answers a ping each second) before it is replaced. */
export const HANG_MS = 15_000

/** What authenticateMessage needs to know of the SMTP session. */
export interface AuthSession {
  ip: string
  helo?: string
  mailFrom: string
  mta: string
}

/** A message's parse, authentication and extraction, the work of a thread. */
export interface PreparedWork {
  mail: ParsedMail
  auth: AuthVerdicts
  extracted: Extracted
  /** the search vector's words of the message and `extracted` (search-text.ts); undefined where the extraction was abandoned */
  searchLexemes?: string
}

/** To a thread: a whole message; the extraction alone; the answer to a DNS question; a ping. */
export type ToThread =
  | { type: 'message'; id: number; raw: Uint8Array; session: AuthSession }
  | { type: 'extract'; id: number; text: string | null; html: string | null }
  | { type: 'answer'; id: number; answer?: unknown; error?: { message: string; code?: string; hostname?: string } }
  | { type: 'ping' }

/** From a thread. `prepared` comes before `extracting`, which comes before `extracted`. */
export type FromThread =
  | { type: 'ready' }
  | { type: 'pong' }
  | { type: 'prepared'; id: number; mail: ParsedMail; auth: AuthVerdicts; thread: number }
  | { type: 'failed'; id: number; error: { message: string; name: string } }
  | { type: 'extracting'; id: number }
  | { type: 'extracted'; id: number; extracted: Extracted; searchLexemes?: string }
  | { type: 'dns'; id: number; message: number; name: string; rrtype: RecordType }

interface Work {
  id: number
  /** null: the extraction alone (`extract`) */
  raw: Uint8Array | null
  session: AuthSession | null
  resolver: Resolver | null
  /** set once the thread parsed and authenticated the message, or given for the extraction alone */
  mail: Pick<ParsedMail, 'text' | 'html'> | null
  prepared: { mail: ParsedMail; auth: AuthVerdicts } | null
  resolve(work: Done): void
  reject(error: Error): void
}

/** What a thread answers of a message: its parse and authentication (null for the extraction alone), its extraction. */
interface Done {
  prepared: { mail: ParsedMail; auth: AuthVerdicts } | null
  extracted: Extracted
  searchLexemes?: string
}

interface Thread {
  worker: Worker
  ready: boolean
  lastHeard: number
  /** the messages it holds, by id */
  work: Map<number, Work>
  /** the message whose extraction it took up, and its deadline */
  extracting: { id: number; timer: ReturnType<typeof setTimeout> } | null
}

/** The failure a message gets when its thread died or hung: the SMTP client is answered 451. */
export class InboundThreadFailed extends Error {}

export class InboundThreads {
  private readonly threads: (Thread | null)[]
  private nextId = 1
  private watch: ReturnType<typeof setInterval> | null = null
  /** messages parsed and authenticated, by the thread id that did it (for tests and diagnostics) */
  readonly prepared = new Map<number, number>()

  constructor(
    size: number,
    private readonly deadlineMs = EXTRACT_DEADLINE_MS,
    private readonly hangMs = HANG_MS,
  ) {
    this.threads = Array.from({ length: Math.max(1, size) }, () => null)
  }

  /** Parses, authenticates (DNS through `resolver`) and extracts a message on a thread. Rejects when its thread died or hung. */
  async prepare(raw: Uint8Array, session: AuthSession, resolver: Resolver): Promise<PreparedWork> {
    // a view's whole buffer would be copied to the thread
    const own = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength ? raw : raw.slice()
    const { prepared, extracted, searchLexemes } = await this.submit({ raw: own, session, resolver, mail: null })
    return { ...prepared!, extracted, searchLexemes }
  }

  /** The new content of a message alone; all null if it took longer than the deadline or its thread failed. */
  extract(mail: Pick<ParsedMail, 'text' | 'html'>): Promise<Extracted> {
    return this.submit({ raw: null, session: null, resolver: null, mail: { text: mail.text, html: mail.html } }).then(
      w => w.extracted,
      () => NOT_EXTRACTED,
    )
  }

  /** The worker threads running now (tests end one to see its messages fail). */
  get workers(): Worker[] {
    return this.threads.flatMap(t => (t ? [t.worker] : []))
  }

  /** Ends every thread (at shutdown, once the listener has stopped); the messages they held fail. A later message starts a thread again. */
  stop() {
    for (const t of this.threads) if (t) this.end(t, new InboundThreadFailed('the inbound threads stopped'))
    if (this.watch) clearInterval(this.watch)
    this.watch = null
  }

  private submit(w: Pick<Work, 'raw' | 'session' | 'resolver' | 'mail'>) {
    return new Promise<Done>((resolve, reject) => {
      this.send({ ...w, id: this.nextId++, prepared: null, resolve, reject })
    })
  }

  /** Gives a message to the thread holding the fewest. */
  private send(w: Work) {
    let slot = 0
    for (let i = 1; i < this.threads.length; i++) if ((this.threads[i]?.work.size ?? 0) < (this.threads[slot]?.work.size ?? 0)) slot = i
    const t = this.threads[slot] ?? this.start(slot)
    t.work.set(w.id, w)
    const message: ToThread =
      w.raw && !w.prepared
        ? { type: 'message', id: w.id, raw: w.raw, session: w.session! }
        : { type: 'extract', id: w.id, text: w.mail!.text, html: w.mail!.html }
    t.worker.postMessage(message)
    if (!this.watch) {
      this.watch = setInterval(() => this.check(), 1000)
      this.watch.unref?.()
    }
  }

  private start(slot: number): Thread {
    const worker = new Worker(new URL('./thread.ts', import.meta.url).href)
    worker.unref()
    const t: Thread = { worker, ready: false, lastHeard: performance.now(), work: new Map(), extracting: null }
    this.threads[slot] = t
    worker.onmessage = (event: MessageEvent<FromThread>) => this.heard(t, event.data)
    worker.addEventListener('error', () => this.end(t, new InboundThreadFailed('the inbound thread failed')))
    worker.addEventListener('close', () => this.end(t, new InboundThreadFailed('the inbound thread ended')))
    return t
  }

  private heard(t: Thread, data: FromThread) {
    t.lastHeard = performance.now()
    switch (data.type) {
      case 'ready':
        t.ready = true
        return
      case 'pong':
        return
      case 'dns':
        return this.ask(t, data)
      case 'prepared': {
        const w = t.work.get(data.id)
        if (!w) return
        w.prepared = { mail: data.mail, auth: data.auth }
        w.mail = data.mail
        this.prepared.set(data.thread, (this.prepared.get(data.thread) ?? 0) + 1)
        return
      }
      case 'failed': {
        const w = t.work.get(data.id)
        if (!w) return
        t.work.delete(data.id)
        w.reject(Object.assign(new Error(data.error.message), { name: data.error.name }))
        return
      }
      case 'extracting': {
        if (!t.work.has(data.id)) return
        if (t.extracting) clearTimeout(t.extracting.timer)
        const timer = setTimeout(() => this.abandon(t, data.id), this.deadlineMs)
        timer.unref?.()
        t.extracting = { id: data.id, timer }
        return
      }
      case 'extracted': {
        if (t.extracting?.id === data.id) {
          clearTimeout(t.extracting.timer)
          t.extracting = null
        }
        const w = t.work.get(data.id)
        if (!w) return
        t.work.delete(data.id)
        w.resolve({ prepared: w.prepared, extracted: data.extracted, searchLexemes: data.searchLexemes })
      }
    }
  }

  /** Answers a thread's DNS question with the resolver of the message that asked. */
  private ask(t: Thread, q: Extract<FromThread, { type: 'dns' }>) {
    const resolver = t.work.get(q.message)?.resolver
    const answer = (a: Omit<Extract<ToThread, { type: 'answer' }>, 'type' | 'id'>) => {
      if (this.threads.includes(t)) t.worker.postMessage({ type: 'answer', id: q.id, ...a } satisfies ToThread)
    }
    if (!resolver) return answer({ error: { message: 'the message is gone', code: 'ECANCELLED' } })
    resolver(q.name, q.rrtype).then(
      result => answer({ answer: result }),
      (error: { message?: string; code?: string; hostname?: string }) =>
        answer({ error: { message: String(error?.message ?? error), code: error?.code, hostname: error?.hostname } }),
    )
  }

  /** The extraction outlasted its deadline: the message is stored without it, the thread's other messages go to a new one. */
  private abandon(t: Thread, id: number) {
    if (!this.threads.includes(t)) return
    const w = t.work.get(id)
    t.work.delete(id)
    const rest = [...t.work.values()]
    t.work.clear()
    this.end(t, null)
    if (w) {
      log.warn('reply extraction abandoned', {
        reason: `took longer than ${this.deadlineMs} ms`,
        text_chars: w.mail?.text?.length ?? 0,
        html_chars: w.mail?.html?.length ?? 0,
      })
      w.resolve({ prepared: w.prepared, extracted: NOT_EXTRACTED })
    }
    for (const other of rest) this.send(other)
  }

  /** Ends a thread and frees its slot; its messages fail with `failure` (null: they were taken elsewhere). */
  private end(t: Thread, failure: Error | null) {
    const slot = this.threads.indexOf(t)
    if (slot < 0) return
    this.threads[slot] = null
    if (t.extracting) clearTimeout(t.extracting.timer)
    t.worker.terminate()
    if (failure && t.work.size) {
      log.warn('inbound thread replaced', { reason: failure.message, messages: t.work.size })
      for (const w of t.work.values()) {
        // an extraction alone is not worth a retry by the client: the message is stored without it
        if (w.raw) w.reject(failure)
        else w.resolve({ prepared: null, extracted: NOT_EXTRACTED })
      }
    }
    t.work.clear()
  }

  /** Each second: a thread holding messages that said nothing for hangMs is replaced; the others are pinged. */
  private check() {
    const now = performance.now()
    let busy = false
    for (const t of this.threads) {
      if (!t?.work.size) continue
      busy = true
      if (t.ready && now - t.lastHeard > this.hangMs) this.end(t, new InboundThreadFailed(`no answer for ${this.hangMs} ms`))
      else t.worker.postMessage({ type: 'ping' } satisfies ToThread)
    }
    if (!busy && this.watch) {
      clearInterval(this.watch)
      this.watch = null
    }
  }
}

/** INBOUND_THREADS, or one thread per core but the one serving SMTP (at least one). */
export const inboundThreadCount = (configured: number | undefined) => configured ?? Math.max(1, availableParallelism() - 1)

/** This process's threads, started as messages arrive. */
export const inboundThreads = perProcess(ctx => new InboundThreads(inboundThreadCount(ctx.config.INBOUND_THREADS)))
