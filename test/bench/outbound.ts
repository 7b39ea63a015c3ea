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
 * email and handed to the relay before the API answers; then the same load again with
 * `Prefer: respond-async`, which answers 202 once the send and its message are committed and
 * relays after the answer (its msg/s: what the relay got in the window; its accept rate and
 * latency: the answers). Closed loops measure the rate at saturation, where latency is 20
 * divided by the rate (Little's law) in either mode; so both modes run once more in an open loop
 * at BENCH_OUTBOUND_RATE sends a second (default 100), below saturation, where the latency is
 * the answer's own. Beside them, two baselines from
 * nodemailer-send.ts with as many sends in flight over a pool of 5 connections to the same relay
 * (the service's relay pool): the baseline of issue 19, the message unsigned and DKIM-signed by
 * nodemailer for every send with the same RSA-2048 key; and for reference one prebuilt message
 * (the same builder, DKIM-signed once) sent again and again, which no send path can approach. Before
 * the runs, sign-rate.ts measures how many RSA-2048 signatures (and whole DKIM signing steps)
 * this machine's Bun makes per second on one core: with every send signed, the number of cores
 * times that rate bounds the send rate even if nothing else cost anything.
 *
 * Printed: messages the relay accepted per second in the measured window, p50/p99 latency per
 * message, CPU time per message of the sending process and (send-mail) of the service and its
 * PostgreSQL backends, the ratios against both baselines and the signing bound; after the runs,
 * that every send was stored, relayed and DKIM-signed (samples verified with mailauth). Targets
 * (printed, not asserted): at least 0.8 of the nodemailer DKIM-signing rate, accept p50 under
 * 10 ms and p99 under 50 ms.
 */
import { rm } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
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
import { report } from './guard'
import { databaseCpu, databaseCpuSpent, freePort, processCpuMicros, runJson, startService, stopAll, waitForHttp, waitForSmtpGreeting } from './common'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
/** concurrent clients of send-mail and of the nodemailer baselines (issue 19: 20) */
const CONNECTIONS = Number(process.env.BENCH_OUTBOUND_CONNECTIONS ?? 20)
/** the nodemailer baselines' pooled connections to the relay, as many as the service's relay pool */
const POOL = 5
/** the open-loop runs' offered rate, sends a second (BENCH_OUTBOUND_RATE; 0: no open-loop runs) */
const RATE = Number(process.env.BENCH_OUTBOUND_RATE ?? 100)
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
  /** CPU time per send of the sending process */
  cpu_us_per_send: number
}

interface RelayStats {
  count: number
  dkim_signed: number
  accepted_at: number[]
  samples: string[]
}

interface SignRate {
  rsa_per_s: number
  dkim_per_s: number
}

/** A run and what the relay saw of it; for send-mail, the service's and the database's CPU per send too. */
interface Run {
  name: string
  load: SendResult
  relay: RelayStats
  serverUs?: number | null
  dbUs?: number | null
}

/** About 1 KB of plain text, the body of every message. */
function bodyText(): string {
  const sentence = 'Here is the summary you asked for: the job finished, 42 files changed, no errors were reported'
  return Array.from({ length: 10 }, (_, i) => `${i + 1}. ${sentence}.`).join('\n') + '\n'
}

/** Messages the relay accepted per second within the load's measured window. */
function relayRate({ load, relay }: Run): number {
  const [from, to] = load.window
  return Math.round(relay.accepted_at.filter(t => t >= from && t < to).length / ((to - from) / 1000))
}

/** The relay's stats once it got `count` messages (the sends accepted before their relay), or after 60 s. */
async function drained(control: string, count: number): Promise<RelayStats> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const stats = (await (await fetch(`${control}/stats`)).json()) as RelayStats
    if (stats.count >= count || Date.now() > deadline) return stats
    await Bun.sleep(100)
  }
}

export async function outboundBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'outbound bench' })
  await setApiLimitCommand(sql, org.org_id, '100000000')
  await setSendLimitsCommand(sql, org.org_id, '100000000', '100000000')
  const from = (await sql.begin(tx => createManagedInbox(tx, org.org_id, MANAGED_DOMAIN))).address
  const key = await managedDkimKey(sql, new ServerKeys(SECRET), MANAGED_DOMAIN)

  const text = bodyText()
  const unsigned = buildMime({
    from: { address: from },
    to: [RECIPIENT],
    cc: [],
    bcc: [],
    subject: 'outbound prebuilt',
    text,
    messageId: `<${randomUUIDv7()}@${MANAGED_DOMAIN}>`,
    date: new Date(),
  })
  const base = `${tmpdir()}/agent-mail-bench-${crypto.randomUUID()}`
  const files = { text: `${base}.txt`, signed: `${base}.eml`, unsigned: `${base}-unsigned.eml`, key: `${base}.key` }
  await Bun.write(files.text, text)
  await Bun.write(files.signed, await dkimSign(unsigned, { domain: key.domain, selector: key.selector, privateKeyPem: key.privateKeyPem }))
  await Bun.write(files.unsigned, unsigned)
  await Bun.write(files.key, key.privateKeyPem)

  const children: Bun.Subprocess[] = []
  const runs: Run[] = []
  let signRate: SignRate
  try {
    // measured first, while nothing else runs
    signRate = await runJson<SignRate>([process.execPath, `${dir}/sign-rate.ts`, files.key, files.signed])
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
        `${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} before the runs\n`,
    )
    /** Runs one load process against a reset relay and collects what the relay saw. */
    const run = async (name: string, argv: string[]): Promise<Run> => {
      await fetch(`${control}/reset`, { method: 'POST' })
      const load = await runJson<SendResult>([process.execPath, ...argv])
      return { name, load, relay: (await (await fetch(`${control}/stats`)).json()) as RelayStats }
    }
    const nodemailerArgs = [`${dir}/nodemailer-send.ts`, String(relayPort), String(POOL), String(SECONDS), String(MAX_SENDS), from, RECIPIENT]
    process.env.BENCH_NODEMAILER_CLIENTS = String(CONNECTIONS)
    runs.push(await run(`nodemailer direct, pool ${POOL}`, [...nodemailerArgs, files.signed]))
    runs.push(await run(`nodemailer DKIM each, pool ${POOL}`, [...nodemailerArgs, files.unsigned, files.key, key.domain, key.selector]))

    const loadArgs = [
      `${dir}/send-load.ts`,
      `http://127.0.0.1:${apiPort}`,
      org.api_key,
      from,
      RECIPIENT,
      files.text,
      String(CONNECTIONS),
      String(SECONDS),
      String(MAX_SENDS),
    ]
    /** A send-mail run, with the service's and the database's CPU per send; an async run's CPU counts until the relay got every send it accepted. */
    const apiRun = async (name: string, mode: 'inline' | 'async', rate = 0): Promise<Run> => {
      const cpuBefore = processCpuMicros(service.pid)
      const dbBefore = await databaseCpu(sql)
      const r = await run(name, [...loadArgs, mode, String(rate)])
      if (mode === 'async') r.relay = await drained(control, r.load.ok)
      const cpuAfter = processCpuMicros(service.pid)
      const dbSpent = databaseCpuSpent(dbBefore, await databaseCpu(sql))
      const perSend = (us: number | null) => (us === null || !r.load.ok ? null : Math.round(us / r.load.ok))
      return { ...r, serverUs: cpuBefore === null || cpuAfter === null ? null : perSend(cpuAfter - cpuBefore), dbUs: perSend(dbSpent) }
    }
    runs.push(await apiRun(`POST /v1/send-mail, ${CONNECTIONS} clients`, 'inline'))
    runs.push(await apiRun('  Prefer: respond-async', 'async'))
    if (RATE > 0) {
      runs.push(await apiRun(`POST /v1/send-mail, ${RATE}/s offered`, 'inline', RATE))
      runs.push(await apiRun(`  Prefer: respond-async, ${RATE}/s`, 'async', RATE))
    }
  } finally {
    await stopAll(children)
    await Promise.all(Object.values(files).map(f => rm(f, { force: true })))
  }

  const [direct, signing, api, later, ...open] = runs as [Run, Run, Run, Run, ...Run[]]
  const rates = runs.map(relayRate)
  const [directRate, signingRate, apiRate, laterRate] = rates as [number, number, number, number]
  const n = (v: number | string | null | undefined) => String(v ?? '').padStart(10)
  console.log(`${'target'.padEnd(38)}${n('msg/s')}${n('p50 ms')}${n('p99 ms')}${n('errors')}${n('client us')}${n('server us')}${n('db us')}`)
  for (const [i, r] of runs.entries()) {
    console.log(
      `${r.name.padEnd(38)}${n(rates[i])}${n(r.load.p50_ms.toFixed(2))}${n(r.load.p99_ms.toFixed(2))}${n(r.load.errors)}${n(r.load.cpu_us_per_send)}${n(r.serverUs)}${n(r.dbUs)}`,
    )
  }
  console.log(
    '(msg/s: messages the relay accepted per second in the measured window; p50/p99: per message as the sender sees it; client us: CPU time per message of ' +
      'the sending process (nodemailer, or the HTTP load generator), warm-up included; server us, db us: CPU time per send of the service process and of its PostgreSQL backends; ' +
      'respond-async: p50/p99 of the 202 answers, CPU counted until the relay got every accepted send; /s offered: an open loop, latency from when each send was due)',
  )
  const acceptRate = Math.round(later.load.measured / ((later.load.window[1] - later.load.window[0]) / 1000))
  console.log(
    `respond-async: ${acceptRate} sends/s answered 202 in the window, ${laterRate} msg/s at the relay in it; ` +
      `${later.load.ok} accepted, all at the relay ${later.relay.count === later.load.ok ? `${((later.relay.accepted_at.at(-1)! - later.load.window[1]) / 1000).toFixed(1)} s after the load ended` : `-- only ${later.relay.count}`}`,
  )
  if (api.load.errors) console.log(`send-mail errors: ${JSON.stringify(api.load.error_statuses)}`)
  for (const r of [later, ...open]) if (r.load.errors) console.log(`${r.name.trim()} errors: ${JSON.stringify(r.load.error_statuses)}`)

  const cores = cpus().length
  const bound = cores * signRate!.dkim_per_s
  console.log(
    `\nsigning on one core of this Bun: ${signRate!.rsa_per_s} RSA-2048 signatures/s (node:crypto, key parsed once), ` +
      `${signRate!.dkim_per_s} whole DKIM signing steps/s (src/mail/outbound/dkim.ts: canonicalization, hashes, signature with the key parsed once). ` +
      `With every send signed and nothing else using a core, signing alone caps sends at ${cores} x ${signRate!.dkim_per_s} = ${bound}/s ` +
      `(${cores} x ${signRate!.rsa_per_s} = ${cores * signRate!.rsa_per_s}/s for the bare signatures); 0.8 of the baseline is ${Math.round(signingRate * 0.8)}/s`,
  )
  console.log(
    `ratio send-mail/nodemailer DKIM-signing each (the baseline): ${(apiRate / signingRate).toFixed(3)} (target >= 0.8); ` +
      `accept latency p50 ${api.load.p50_ms.toFixed(2)} ms (target < 10), p99 ${api.load.p99_ms.toFixed(2)} ms (target < 50); ` +
      `send-mail/nodemailer direct (prebuilt, signed once): ${(apiRate / directRate).toFixed(3)}; send-mail/signing bound: ${(apiRate / bound).toFixed(3)}`,
  )
  console.log(
    `respond-async: ratio ${(laterRate / signingRate).toFixed(3)} at the relay, ${(acceptRate / signingRate).toFixed(3)} answered; ` +
      `accept latency p50 ${later.load.p50_ms.toFixed(2)} ms (target < 10), p99 ${later.load.p99_ms.toFixed(2)} ms (target < 50)`,
  )
  if (open.length === 2) {
    const [inlineOpen, asyncOpen] = open as [Run, Run]
    console.log(
      `at ${RATE}/s offered (open loop): inline p50 ${inlineOpen.load.p50_ms.toFixed(2)} ms, p99 ${inlineOpen.load.p99_ms.toFixed(2)} ms; ` +
        `respond-async p50 ${asyncOpen.load.p50_ms.toFixed(2)} ms (target < 10), p99 ${asyncOpen.load.p99_ms.toFixed(2)} ms (target < 50)`,
    )
  }

  if (api.serverUs) {
    report('outbound send', {
      unit: 'send',
      cpu_ms_per_unit: api.serverUs / 1000,
      headline: {
        sends_per_s: apiRate,
        ratio: Math.round((apiRate / signingRate) * 1000) / 1000,
        p50_ms: api.load.p50_ms,
        p99_ms: api.load.p99_ms,
      },
      ...(api.dbUs && { db_ms_per_unit: api.dbUs / 1000 }),
    })
  }
  if (later.serverUs) {
    report('outbound send respond-async', {
      unit: 'send',
      cpu_ms_per_unit: later.serverUs / 1000,
      headline: { sends_per_s: laterRate, accepts_per_s: acceptRate, p50_ms: later.load.p50_ms, p99_ms: later.load.p99_ms },
      ...(later.dbUs && { db_ms_per_unit: later.dbUs / 1000 }),
    })
  }

  // Every accepted send was stored as an outbound email and reached the relay, DKIM-signed.
  const [stored] = await sql<{ emails: number; queued: number; other: number }[]>`
    select (select count(*)::int from emails where org_id = ${org.org_id} and direction = 'outbound') as emails,
           (select count(*)::int from sends where org_id = ${org.org_id} and status = 'queued') as queued,
           (select count(*)::int from sends where org_id = ${org.org_id} and status <> 'queued') as other`
  const resolver = memoryResolver({ [`${key.selector}._domainkey.${key.domain}`]: { TXT: [[`v=DKIM1; k=rsa; p=${key.publicKey}`]] } })
  const verdicts = (r: Run) =>
    Promise.all(
      r.relay.samples.map(async raw => {
        const v = await authenticate(raw, { ip: '127.0.0.1', sender: from, mta: 'relay.bench.local', resolver: resolver as never })
        const d = v.dkim.results[0] as { status: { result: string }; signingDomain: string } | undefined
        return d ? `${d.status.result} (d=${d.signingDomain})` : 'no signature'
      }),
    )
  const [apiVerdicts, signingVerdicts] = [await verdicts(api), await verdicts(signing)]
  const apiRuns = [api, later, ...open]
  const all = apiRuns.reduce((n, r) => n + r.load.ok, 0)
  const consistent =
    stored!.emails === all && stored!.queued === all && apiRuns.every(r => r.relay.count === r.load.ok && r.relay.dkim_signed === r.relay.count)
  const each = (f: (r: Run) => number) => apiRuns.map(f).join(' + ')
  console.log(
    `after the runs: ${each(r => r.load.ok)} sends answered queued (${apiRuns.map(r => r.name.trim()).join(', ')}), ${stored!.queued} sends queued and ${stored!.other} in another state, ${stored!.emails} outbound emails stored, ` +
      `${each(r => r.relay.count)} messages at the relay, ${each(r => r.relay.dkim_signed)} of them starting with DKIM-Signature; ` +
      `DKIM of ${apiVerdicts.length} sampled at the relay: ${apiVerdicts.join(', ')}${consistent ? '' : ' -- MISMATCH'}; ` +
      `nodemailer signing each: ${signing.relay.dkim_signed} of ${signing.relay.count} signed, sampled: ${signingVerdicts.join(', ')}; direct: ${direct.relay.dkim_signed} of ${direct.relay.count} signed`,
  )
}
