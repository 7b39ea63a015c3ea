/**
 * Outbound section of `make bench`: sustained POST /v1/send-mail. The service runs as in
 * production (src/index.ts, ROLES=api) with SMTP_RELAY_URL pointing at nodemailer's smtp-server
 * in a process of its own (outbound-relay.ts), which accepts and counts messages without
 * processing them. One developer organization sends from a managed inbox, with its API and
 * send limits lifted by the operator overrides (`admin org set-api-limit`, `set-send-limits`):
 * the limiters still run, they just do not refuse.
 *
 * send-load.ts, a separate process, keeps BENCH_OUTBOUND_CONNECTIONS requests in flight, each
 * send with a subject of its own so the payload-derived idempotency key never dedupes. Every
 * send is built with mimetext, DKIM-signed with the managed domain's key, stored as an outbound
 * email and handed to the relay before the API answers. Beside it, the baseline:
 * nodemailer-send.ts sends one prebuilt message (the same builder, DKIM-signed once) straight
 * to the same relay over as many pooled connections. Printed: messages the relay accepted per
 * second in the measured window, p50/p99 latency per message, and after the run that every
 * send was stored, relayed and DKIM-signed (a sample is verified with mailauth). Target
 * (printed, not asserted): the send-mail rate at least half the direct nodemailer rate.
 */
import { rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { randomUUIDv7 } from 'bun'
import { authenticate } from 'mailauth'
import type { Sql } from '../../src/db/client'
import { ServerKeys } from '../../src/crypto'
import { memoryResolver } from '../../src/dns/resolver'
import { createOrgCommand, setApiLimitCommand, setSendLimitsCommand } from '../../src/admin/commands'
import { createManagedInbox } from '../../src/inboxes/service'
import { buildMime } from '../../src/mail/outbound/build'
import { dkimSign } from '../../src/mail/outbound/dkim'
import { managedDkimKey } from '../../src/mail/outbound/managed-key'
import { databaseCpu, databaseCpuSpent, freePort, processCpuMicros, runJson, startService, stopAll, waitForHttp, waitForSmtpGreeting } from './common'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONNECTIONS = Number(process.env.BENCH_OUTBOUND_CONNECTIONS ?? 10)
const MAX_SENDS = 50_000
const dir = import.meta.dir

const MANAGED_DOMAIN = 'agents.bench.local'
const RECIPIENT = 'reader@relay.bench.example'
const SECRET = 'bench-secret-0123456789abcdef0123456789'

interface SendResult {
  sends: number
  ok: number
  errors: number
  error_statuses?: Record<string, number>
  window: [number, number]
  measured: number
  p50_ms: number
  p99_ms: number
}

interface RelayStats {
  count: number
  dkim_signed: number
  accepted_at: number[]
  samples: string[]
}

/** About 1 KB of plain text, the body of every message. */
function bodyText(): string {
  const sentence = 'Here is the summary you asked for: the job finished, 42 files changed, no errors were reported'
  return Array.from({ length: 10 }, (_, i) => `${i + 1}. ${sentence}.`).join('\n') + '\n'
}

export async function outboundBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'outbound bench' })
  await setApiLimitCommand(sql, org.org_id, '100000000')
  await setSendLimitsCommand(sql, org.org_id, '100000000', '100000000')
  const from = (await sql.begin(tx => createManagedInbox(tx, org.org_id, MANAGED_DOMAIN))).address
  const key = await managedDkimKey(sql, new ServerKeys(SECRET), MANAGED_DOMAIN)

  const text = bodyText()
  const prebuilt = await dkimSign(
    buildMime({ from: { address: from }, to: [RECIPIENT], cc: [], bcc: [], subject: 'outbound prebuilt', text, messageId: `<${randomUUIDv7()}@${MANAGED_DOMAIN}>`, date: new Date() }),
    { domain: key.domain, selector: key.selector, privateKeyPem: key.privateKeyPem },
  )
  const base = `${tmpdir()}/agent-mail-bench-${crypto.randomUUID()}`
  await Bun.write(`${base}.txt`, text)
  await Bun.write(`${base}.eml`, prebuilt)

  const children: Bun.Subprocess[] = []
  let direct: SendResult, api: SendResult
  let directStats: RelayStats, apiStats: RelayStats
  let cpuUs: number | null = null
  let dbUs: number | null = null
  try {
    const relayPort = await freePort()
    const controlPort = await freePort()
    const control = `http://127.0.0.1:${controlPort}`
    children.push(Bun.spawn([process.execPath, `${dir}/outbound-relay.ts`, String(relayPort), String(controlPort)], { stdout: 'ignore', stderr: 'inherit' }))
    await waitForHttp(`${control}/health`)
    await waitForSmtpGreeting(relayPort)

    const apiPort = await freePort()
    // one JSON line per request and per send, to /dev/null: part of the cost, as in production
    const service = await startService(children, {
      DATABASE_URL: dbUrl,
      PORT: String(apiPort),
      HOST: '127.0.0.1',
      ROLES: 'api',
      SECRET_KEY: SECRET,
      MANAGED_DOMAIN,
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relayPort}`,
      LOG_LEVEL: 'info',
    })

    console.log(
      `\noutbound: POST /v1/send-mail (${text.length}-byte body_text, one recipient) from a managed inbox, built (mimetext), ` +
        `DKIM-signed (RSA-2048), stored and relayed before the answer; the service (ROLES=api, its relay pool of 5 connections) relays to ` +
        `smtp-server in its own process; ${CONNECTIONS} concurrent clients, ${SECONDS} s per run after 1 s of warm-up; ` +
        `load average ${loadavg()[0]!.toFixed(2)} before the runs\n`,
    )
    const stats = async () => (await (await fetch(`${control}/stats`)).json()) as RelayStats
    const reset = () => fetch(`${control}/reset`, { method: 'POST' })

    await reset()
    direct = await runJson<SendResult>([process.execPath, `${dir}/nodemailer-send.ts`, String(relayPort), String(CONNECTIONS), String(SECONDS), String(MAX_SENDS), from, RECIPIENT, `${base}.eml`])
    directStats = await stats()

    await reset()
    const cpuBefore = processCpuMicros(service.pid)
    const dbBefore = await databaseCpu(sql)
    api = await runJson<SendResult>([process.execPath, `${dir}/send-load.ts`, `http://127.0.0.1:${apiPort}`, org.api_key, from, RECIPIENT, `${base}.txt`, String(CONNECTIONS), String(SECONDS), String(MAX_SENDS)])
    const cpuAfter = processCpuMicros(service.pid)
    const dbSpent = databaseCpuSpent(dbBefore, await databaseCpu(sql))
    apiStats = await stats()
    if (cpuBefore !== null && cpuAfter !== null && api.ok) cpuUs = Math.round((cpuAfter - cpuBefore) / api.ok)
    if (dbSpent !== null && api.ok) dbUs = Math.round(dbSpent / api.ok)
  } finally {
    await stopAll(children)
    await rm(`${base}.txt`, { force: true })
    await rm(`${base}.eml`, { force: true })
  }

  /** Messages the relay accepted per second within the load's measured window. */
  const relayRate = (r: SendResult, s: RelayStats) => {
    const [from, to] = r.window
    return Math.round(s.accepted_at.filter(t => t >= from && t < to).length / ((to - from) / 1000))
  }
  const directRate = relayRate(direct!, directStats!)
  const apiRate = relayRate(api!, apiStats!)
  const n = (v: number | string) => String(v).padStart(10)
  console.log(`${'target'.padEnd(36)}${n('msg/s')}${n('p50 ms')}${n('p99 ms')}${n('errors')}${n('server us')}${n('db us')}`)
  console.log(`${`nodemailer direct, ${CONNECTIONS} connections`.padEnd(36)}${n(directRate)}${n(direct!.p50_ms.toFixed(2))}${n(direct!.p99_ms.toFixed(2))}${n(direct!.errors)}${n('')}${n('')}`)
  console.log(`${`POST /v1/send-mail, ${CONNECTIONS} clients`.padEnd(36)}${n(apiRate)}${n(api!.p50_ms.toFixed(2))}${n(api!.p99_ms.toFixed(2))}${n(api!.errors)}${n(cpuUs ?? 'n/a')}${n(dbUs ?? 'n/a')}`)
  console.log('(msg/s: messages the relay accepted per second in the measured window; p50/p99: per message as the sender sees it; server us, db us: CPU time per send of the service process and of its PostgreSQL backends)')
  if (api!.errors) console.log(`send-mail errors: ${JSON.stringify(api!.error_statuses)}`)
  console.log(`\nratio send-mail/nodemailer: ${(apiRate / directRate).toFixed(3)} (target >= 0.5)`)

  // Every accepted send was stored as an outbound email and reached the relay, DKIM-signed.
  const [stored] = await sql<{ emails: number; queued: number; other: number }[]>`
    select (select count(*)::int from emails where org_id = ${org.org_id} and direction = 'outbound') as emails,
           (select count(*)::int from sends where org_id = ${org.org_id} and status = 'queued') as queued,
           (select count(*)::int from sends where org_id = ${org.org_id} and status <> 'queued') as other`
  const resolver = memoryResolver({ [`${key.selector}._domainkey.${key.domain}`]: { TXT: [[`v=DKIM1; k=rsa; p=${key.publicKey}`]] } })
  const verdicts = await Promise.all(
    apiStats!.samples.map(async raw => {
      const r = await authenticate(raw, { ip: '127.0.0.1', sender: from, mta: 'relay.bench.local', resolver: resolver as never })
      const d = r.dkim.results[0] as { status: { result: string }; signingDomain: string } | undefined
      return d ? `${d.status.result} (d=${d.signingDomain})` : 'no signature'
    }),
  )
  const consistent = stored!.emails === api!.ok && stored!.queued === api!.ok && apiStats!.count === api!.ok && apiStats!.dkim_signed === apiStats!.count
  console.log(
    `after the run: ${api!.ok} sends answered queued, ${stored!.queued} sends queued and ${stored!.other} in another state, ${stored!.emails} outbound emails stored, ` +
      `${apiStats!.count} messages at the relay, ${apiStats!.dkim_signed} of them starting with DKIM-Signature; ` +
      `DKIM of ${verdicts.length} sampled at the relay: ${verdicts.join(', ')}${consistent ? '' : ' -- MISMATCH'}`,
  )
}
