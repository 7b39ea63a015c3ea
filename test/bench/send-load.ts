/**
 * A closed-loop POST /v1/send-mail load generator, run as its own process:
 * `bun test/bench/send-load.ts <api-url> <api-key> <from> <to> <body-file> <connections> <seconds> <max-sends> [async]`.
 *
 * Each connection sends one message after another, each with a subject of its own
 * (`outbound <n>`), so the payload-derived idempotency key never dedupes two sends; body_text
 * comes from body-file. Runs for 1 s of warm-up plus `seconds`, and at most `max-sends` sends
 * in all. With `async`, every request carries `Prefer: respond-async` and a send is ok when it
 * answers 202 queued (accepted, relayed after the answer) instead of 200 queued (relayed).
 * Prints one JSON object: sends (all, warm-up included), ok (200 queued), errors with a
 * sample of their statuses, the measured window (epoch ms) and the sends and p50/p99 API
 * latency in it, and this process's CPU time per send over the whole run.
 */
import { closedLoop, epochMs, loopSummary } from './common'

const [apiUrl, apiKey, from, to, bodyFile, connectionsArg = '10', secondsArg = '5', maxArg = '50000', mode = 'inline'] = process.argv.slice(2)
if (!apiUrl || !apiKey || !from || !to || !bodyFile)
  throw new Error('usage: send-load.ts <api-url> <api-key> <from> <to> <body-file> <connections> <seconds> <max-sends>')
const connections = Number(connectionsArg)
const durationMs = Number(secondsArg) * 1000
const maxSends = Number(maxArg)
const bodyText = await Bun.file(bodyFile).text()
const respondAsync = mode === 'async'
const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...(respondAsync && { prefer: 'respond-async' }) }
const okStatus = respondAsync ? 202 : 200

const statuses = new Map<string, number>()
const result = await closedLoop({ connections, durationMs, maxSends, clock: epochMs }, async n => {
  let status = 'network error'
  try {
    const res = await fetch(`${apiUrl}/v1/send-mail`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ from, to, subject: `outbound ${n}`, body_text: bodyText }),
      keepalive: true,
    })
    const json = (await res.json()) as { data?: { status?: string }; error?: { code?: string } }
    status = res.status === okStatus && json.data?.status === 'queued' ? 'ok' : `${res.status} ${json.error?.code ?? json.data?.status ?? ''}`
  } catch {}
  if (status !== 'ok') statuses.set(status, (statuses.get(status) ?? 0) + 1)
  return status === 'ok'
})
console.log(JSON.stringify(loopSummary(result, { error_statuses: Object.fromEntries(statuses) })))
