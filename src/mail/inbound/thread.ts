/**
 * An inbound thread of the pool (threads.ts): parses and authenticates each message it is sent,
 * then extracts its reply, one extraction at a time in order. Its DNS lookups are questions to
 * the thread that sent the message.
 */
import { threadId } from 'node:worker_threads'
import type { Resolver } from '../../dns/resolver'
import { authenticateMessage } from './authenticate'
import { extractReply } from './extract'
import { type ParsedMail, parseMail } from './parse'
import { messageLexemes } from '../search-text'
import type { Extracted, FromThread, ToThread } from './threads'

declare const self: Worker

const post = (message: FromThread) => self.postMessage(message)

let nextQuestion = 1
const questions = new Map<number, { resolve(answer: unknown): void; reject(error: Error): void }>()

/** The resolver of one message: each lookup is a question to the sending thread, answered by the message's resolver. */
const resolverOf =
  (message: number): Resolver =>
  (name, rrtype) =>
    new Promise((resolve, reject) => {
      const id = nextQuestion++
      questions.set(id, { resolve, reject })
      post({ type: 'dns', id, message, name, rrtype })
    })

// One extraction at a time: the sending thread's deadline covers the one taken up.
let extractions: Promise<void> = Promise.resolve()
const extract = (id: number, mail: Pick<ParsedMail, 'text' | 'html'> & Partial<ParsedMail>) => {
  extractions = extractions.then(async () => {
    post({ type: 'extracting', id })
    const extracted: Extracted = await extractReply(mail)
    // the search vector's words of a whole message, cut here rather than on the thread that stores it
    const searchLexemes =
      mail.subject === undefined
        ? undefined
        : messageLexemes({
            subject: mail.subject,
            fromName: mail.from?.name ?? null,
            fromAddress: mail.from?.address ?? null,
            text: mail.text,
            newText: extracted.text,
          })
    post({ type: 'extracted', id, extracted, searchLexemes })
  })
}

async function prepare(message: Extract<ToThread, { type: 'message' }>) {
  const { id, raw, session } = message
  try {
    const [mail, auth] = await Promise.all([parseMail(raw), authenticateMessage(raw, session, resolverOf(id))])
    post({ type: 'prepared', id, mail, auth, thread: threadId })
    extract(id, mail)
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error))
    post({ type: 'failed', id, error: { message: e.message, name: e.name } })
  }
}

self.onmessage = (event: MessageEvent<ToThread>) => {
  const data = event.data
  switch (data.type) {
    case 'message':
      return void prepare(data)
    case 'extract':
      return extract(data.id, data)
    case 'answer': {
      const q = questions.get(data.id)
      if (!q) return
      questions.delete(data.id)
      if (data.error) q.reject(Object.assign(new Error(data.error.message), { code: data.error.code, hostname: data.error.hostname }))
      else q.resolve(data.answer)
      return
    }
    case 'ping':
      return post({ type: 'pong' })
  }
}

post({ type: 'ready' })
