/**
 * The reply extraction (extract.ts) runs on a thread of its own, under a deadline per message.
 * Its libraries read a reply with backtracking regular expressions and repeated HTML parses
 * whose cost grows faster than the body: a crafted body of 20,000 characters took over a second
 * (a line of "On On On …", ten thousand `<br>`), and a message must never stall the SMTP
 * sessions of its process. So the work leaves the thread that serves SMTP, and a message that
 * takes longer than EXTRACT_DEADLINE_MS ends its thread: it is stored with its extracted fields
 * null, and the messages queued behind it go to a new thread.
 *
 * One thread per process serves the messages in order; the deadline of each starts when the
 * one before it is done (when the thread takes it up), so waiting in the queue never counts, nor
 * does the thread's start (it says when it has loaded).
 */
import { perProcess } from '../../context'
import { log } from '../../log'
import type { ParsedMail } from './parse'

/** The new content of a message (extract.ts); null where the message has no such body, or it was not extracted. */
export interface Extracted {
  text: string | null
  html: string | null
}

export const NOT_EXTRACTED: Extracted = { text: null, html: null }

/** How long one message may take; replies take a few milliseconds (docs/extracted-text.md). */
export const EXTRACT_DEADLINE_MS = 500

export interface ExtractRequest {
  id: number
  text: string | null
  html: string | null
}

export interface ExtractResult {
  id: number
  extracted: Extracted
}

interface Pending {
  request: ExtractRequest
  resolve(extracted: Extracted): void
}

export class ExtractionThread {
  private worker: Worker | null = null
  /** the thread has loaded its libraries (it says 'ready') */
  private ready = false
  /** in the order the thread takes them up; the first is the one it works on */
  private queue: Pending[] = []
  private timer: ReturnType<typeof setTimeout> | null = null
  private nextId = 1

  constructor(private readonly deadlineMs = EXTRACT_DEADLINE_MS) {}

  /** The new content of a message; all null if it took longer than the deadline or its thread failed. */
  extract(mail: Pick<ParsedMail, 'text' | 'html'>): Promise<Extracted> {
    return new Promise(resolve => {
      const pending = { request: { id: this.nextId++, text: mail.text, html: mail.html }, resolve }
      this.queue.push(pending)
      this.thread().postMessage(pending.request)
      if (this.queue.length === 1) this.startDeadline()
    })
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = new Worker(new URL('./extract-thread.ts', import.meta.url).href)
    worker.unref()
    worker.onmessage = (event: MessageEvent<ExtractResult | 'ready'>) => {
      if (event.data !== 'ready') return this.done(event.data)
      this.ready = true
      this.startDeadline()
    }
    worker.addEventListener('error', () => this.fail(worker, 'the extraction thread failed'))
    this.worker = worker
    this.ready = false
    return worker
  }

  private startDeadline() {
    if (this.timer) clearTimeout(this.timer)
    this.timer = this.queue.length && this.ready ? setTimeout(() => this.fail(this.worker!, `took longer than ${this.deadlineMs} ms`), this.deadlineMs) : null
    this.timer?.unref?.()
  }

  private done(result: ExtractResult) {
    if (this.queue[0]?.request.id !== result.id) return
    this.queue.shift()!.resolve(result.extracted)
    this.startDeadline()
  }

  /** Ends the thread; its current message is not extracted, the others go to a new thread. */
  private fail(worker: Worker, reason: string) {
    if (worker !== this.worker) return
    worker.terminate()
    this.worker = null
    const [current, ...rest] = this.queue
    this.queue = rest
    if (current) {
      log.warn('reply extraction abandoned', { reason, text_chars: current.request.text?.length ?? 0, html_chars: current.request.html?.length ?? 0 })
      current.resolve(NOT_EXTRACTED)
    }
    for (const p of rest) this.thread().postMessage(p.request)
    this.startDeadline()
  }
}

/** This process's extraction thread, started with the first message. */
export const extractionThread = perProcess(() => new ExtractionThread())
