/**
 * A closed-loop POST /v1/send-mail load generator, run as its own process:
 * `bun test/bench/send-load.ts <api-url> <api-key> <from> <to> <body-file> <connections> <seconds> <max-sends> [inline|async] [rate]`.
 *
 * Each connection sends one message after another, each with a subject of its own
 * (`outbound <run> <n>`), so the payload-derived idempotency key never dedupes two sends; body_text
 * comes from body-file. Runs for 1 s of warm-up plus `seconds`, and at most `max-sends` sends
 * in all. With `async`, every request carries `Prefer: respond-async` and a send is ok when it
 * answers 202 queued (accepted, relayed after the answer) instead of 200 queued (relayed). With a `rate`,
 * the loop is open instead: `rate` sends a second started on schedule whatever the answers (at
 * most 500 in flight; one due past that is not sent and counts as an error), each latency counted
 * from when the send was due, so a stalled service is not hidden by sending less.
 * Prints one JSON object: sends (all, warm-up included), ok (200 queued), errors with a
 * sample of their statuses, the measured window (epoch ms) and the sends and p50/p99 API
 * latency in it, and this process's CPU time per send over the whole run.
 */
import { closedLoop, epochMs, type LoopResult, loopSummary } from './common'

const [apiUrl, apiKey, from, to, bodyFile, connectionsArg = '10', secondsArg = '5', maxArg = '50000', mode = 'inline', rateArg = '0'] = process.argv.slice(2)
if (!apiUrl || !apiKey || !from || !to || !bodyFile)
  throw new Error('usage: send-load.ts <api-url> <api-key> <from> <to> <body-file> <connections> <seconds> <max-sends>')
const connections = Number(connectionsArg)
const durationMs = Number(secondsArg) * 1000
const maxSends = Number(maxArg)
const bodyText = await Bun.file(bodyFile).text()
const respondAsync = mode === 'async'
const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...(respondAsync && { prefer: 'respond-async' }) }
const okStatus = respondAsync ? 202 : 200
// a run of its own in every subject: no send replays one of an earlier run under its derived key
const subject = `outbound ${respondAsync ? 'async ' : ''}${crypto.randomUUID().slice(0, 8)}`
const rate = Number(rateArg)
const MAX_IN_FLIGHT = 500

/** The open loop: `rate` attempts a second on schedule, for 1 s of warm-up plus `durationMs`; latencies from when each was due. */
async function openLoop(attempt: (n: number) => Promise<boolean>): Promise<LoopResult> {
  const latencies: number[] = []
  let [sends, ok, inFlight] = [0, 0, 0]
  const start = epochMs()
  const warmupEnd = start + 1000
  const end = warmupEnd + durationMs
  const running: Promise<void>[] = []
  for (let n = 0; sends < maxSends; n++) {
    const due = start + (n * 1000) / rate
    if (due >= end) break
    if (due > epochMs()) await Bun.sleep(due - epochMs())
    sends++
    if (inFlight >= MAX_IN_FLIGHT) continue
    inFlight++
    running.push(
      attempt(n).then(succeeded => {
        inFlight--
        if (succeeded) ok++
        if (due >= warmupEnd && succeeded) latencies.push(epochMs() - due)
      }),
    )
  }
  await Promise.all(running)
  latencies.sort((a, b) => a - b)
  return { sends, ok, latencies, warmupEnd, end }
}

const statuses = new Map<string, number>()
const send = async (n: number) => {
  let status = 'network error'
  try {
    const res = await fetch(`${apiUrl}/v1/send-mail`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ from, to, subject: `${subject} ${n}`, body_text: bodyText }),
      keepalive: true,
    })
    const json = (await res.json()) as { data?: { status?: string }; error?: { code?: string } }
    status = res.status === okStatus && json.data?.status === 'queued' ? 'ok' : `${res.status} ${json.error?.code ?? json.data?.status ?? ''}`
  } catch {}
  if (status !== 'ok') statuses.set(status, (statuses.get(status) ?? 0) + 1)
  return status === 'ok'
}
const result = rate > 0 ? await openLoop(send) : await closedLoop({ connections, durationMs, maxSends, clock: epochMs }, send)
console.log(JSON.stringify(loopSummary(result, { error_statuses: Object.fromEntries(statuses) })))
