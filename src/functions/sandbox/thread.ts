/**
 * A sandbox thread: runs the sandboxes the pool sends it, several at a time (they interleave
 * while they wait for host operations), and forwards their fetches to the main thread.
 */
import type { FetchAnswer, FromThread, GuestFetch, ToThread } from './protocol'
import { runInSandbox, WarmSandboxes } from './engine'

declare const self: Worker

const warm = new WarmSandboxes()
const waiting = new Map<string, (answer: FetchAnswer) => void>()
let nextCall = 1
const post = (message: FromThread) => self.postMessage(message)

self.onmessage = (event: MessageEvent<ToThread>) => {
  const message = event.data
  if (message.type === 'answer') {
    const key = `${message.runId}:${message.callId}`
    waiting.get(key)?.(message.value)
    waiting.delete(key)
    return
  }
  const { runId, request } = message
  const bridge = {
    request(_op: 'fetch', arg: unknown) {
      const callId = nextCall++
      return new Promise<FetchAnswer>(resolve => {
        waiting.set(`${runId}:${callId}`, resolve)
        post({ type: 'fetch', runId, callId, arg: arg as GuestFetch })
      })
    },
  }
  runInSandbox(request, bridge, warm).then(result => post({ type: 'done', runId, result }))
}

post({ type: 'ready' })
