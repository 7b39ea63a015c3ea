/** A real HTTP receiver on loopback that records what it is sent and answers as told. */
export interface Received {
  path: string
  headers: Record<string, string>
  body: string
  json: any
}

export interface Receiver {
  url: (path?: string) => string
  port: number
  requests: Received[]
  /** answers for a path, in order; the last one repeats */
  respond(path: string, ...answers: (number | ((r: Received) => Response))[]): void
  /** resolves once `count` requests have arrived at `path` (or anywhere when no path) */
  waitFor(count: number, path?: string, timeoutMs?: number): Promise<Received[]>
  stop(): void
}

export function startReceiver(port = 0): Receiver {
  const requests: Received[] = []
  const answers = new Map<string, (number | ((r: Received) => Response))[]>()
  const waiters: (() => void)[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port,
    async fetch(req) {
      const body = await req.text()
      const path = new URL(req.url).pathname
      let json: unknown = null
      try {
        json = JSON.parse(body)
      } catch {}
      const received = { path, headers: Object.fromEntries(req.headers), body, json }
      requests.push(received)
      for (const w of waiters.splice(0)) w()
      const queue = answers.get(path) ?? []
      const answer = queue.length > 1 ? queue.shift()! : (queue[0] ?? 200)
      return typeof answer === 'number' ? new Response(answer === 200 ? 'ok' : `status ${answer}`, { status: answer }) : answer(received)
    },
  })
  return {
    port: server.port!,
    url: (path = '/hook') => `http://127.0.0.1:${server.port}${path}`,
    requests,
    respond(path, ...list) {
      answers.set(path, list)
    },
    async waitFor(count, path, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs
      const matching = () => requests.filter(r => !path || r.path === path)
      while (matching().length < count) {
        if (Date.now() > deadline) throw new Error(`receiver: ${matching().length} of ${count} requests after ${timeoutMs} ms`)
        await new Promise<void>(resolve => {
          waiters.push(resolve)
          setTimeout(resolve, 200)
        })
      }
      return matching()
    },
    stop() {
      server.stop(true)
    },
  }
}
