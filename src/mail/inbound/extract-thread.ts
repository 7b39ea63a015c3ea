/** The worker thread of the reply extraction (extraction.ts): extracts each message it is sent, in order. */
import { extractReply } from './extract'
import type { ExtractRequest, ExtractResult } from './extraction'

declare const self: Worker

self.onmessage = async (event: MessageEvent<ExtractRequest>) => {
  const { id, text, html } = event.data
  const result: ExtractResult = { id, extracted: await extractReply({ text, html }) }
  self.postMessage(result)
}

// loaded: the deadlines start from here, so the thread's start never counts against a message
self.postMessage('ready')
