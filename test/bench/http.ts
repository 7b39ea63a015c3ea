/**
 * HTTP section of `make bench`, every load from wrk (2 threads, 50 connections): the service
 * (`ROLES=api`, request log on, through node:http as the api role serves) against baselines in
 * processes of their own, measured in the same run (bare-api.ts):
 *
 * - authenticated GET /v1/whoami against a bare Bun.serve answering the same JSON;
 * - GET /v1/emails?limit=50 (100 stored messages) and POST /v1/inboxes against a bare Bun.serve
 *   running the same SQL through postgres.js, with no framework, authentication or limiter;
 * - the bare whoami on Bun's node:http against the same on Bun.serve: what the listener the api
 *   role needs for pipelining (src/http/serve.ts) costs by itself.
 *
 * Targets on a 2-core machine: whoami at least 0.4 of its baseline with p99 under 5 ms; the two
 * SQL routes at least 0.5 of theirs.
 */
import type { Sql } from '../../src/db/client'
import { createOrgCommand, setApiLimitCommand } from '../../src/admin/commands'
import { parseMail } from '../../src/mail/inbound/parse'
import { NO_VERDICTS } from '../../src/mail/inbound/authenticate'
import { storeEmail } from '../../src/mail/store'
import { report } from './guard'
import { benchContext, freePort, startService, stopAll, waitForHttp, wrk, type WrkResult } from './common'

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const MANAGED_DOMAIN = 'agents.bench.local'
const SECRET_KEY = 'bench-secret-0123456789abcdef0123456789'
const dir = import.meta.dir

/** 100 received messages in the organization's mailbox, stored as the inbound path stores them. */
async function seedMailbox(sql: Sql, orgId: string) {
  const ctx = benchContext(sql)
  for (let i = 0; i < 100; i++) {
    const raw = new TextEncoder().encode(
      `From: Sam <sam@sender.example>\r\nTo: agent@${MANAGED_DOMAIN}\r\nSubject: Message ${i}\r\nMessage-ID: <m${i}@sender.example>\r\n\r\nHello ${i}\r\n`,
    )
    const mail = await parseMail(raw)
    await sql.begin(tx =>
      storeEmail(ctx, tx, {
        orgId,
        direction: 'inbound',
        eventType: 'email.received',
        mail,
        raw,
        mailFrom: 'sam@sender.example',
        rcptTo: [`agent@${MANAGED_DOMAIN}`],
        auth: NO_VERDICTS,
      }),
    )
  }
}

export async function httpBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'bench' })
  // The plan's 3000/min would turn the run into a 429 benchmark; the limiter still runs.
  await setApiLimitCommand(sql, org.org_id, '100000000')
  await seedMailbox(sql, org.org_id)

  console.log(
    `\nhttp: wrk 4.1 (2 threads), ${CONNECTIONS} connections, ${SECONDS} s per target after 1 s of warm-up, ${navigator.hardwareConcurrency} cores, load average ${(await import('node:os')).loadavg()[0]!.toFixed(2)} before the runs\n`,
  )

  const children: Bun.Subprocess[] = []
  try {
    const apiPort = await freePort()
    // the request log is part of the cost measured: one JSON line per request, to /dev/null
    const service = await startService(
      children,
      { DATABASE_URL: dbUrl, PORT: String(apiPort), HOST: '127.0.0.1', ROLES: 'api', SECRET_KEY, MANAGED_DOMAIN, LOG_LEVEL: 'info' },
      { profile: false },
    )
    const api = `http://127.0.0.1:${apiPort}`
    const auth = { authorization: `Bearer ${org.api_key}` }
    const whoamiBody = await (await fetch(`${api}/v1/whoami`, { headers: auth })).text()

    const bare: Record<'bun' | 'node', string> = { bun: '', node: '' }
    for (const mode of ['bun', 'node'] as const) {
      const port = await freePort()
      children.push(
        Bun.spawn([process.execPath, `${dir}/bare-api.ts`, mode, String(port)], {
          stdout: 'ignore',
          stderr: 'inherit',
          env: { ...process.env, DATABASE_URL: dbUrl, BENCH_ORG_ID: org.org_id, BENCH_WHOAMI: whoamiBody, MANAGED_DOMAIN },
        }),
      )
      await waitForHttp(`http://127.0.0.1:${port}/v1/whoami`)
      bare[mode] = `http://127.0.0.1:${port}`
    }

    const load = (url: string, opts: { method?: string; body?: string; headers?: Record<string, string>; cpuOf?: number } = {}) =>
      wrk(url, { connections: CONNECTIONS, seconds: SECONDS, ...opts })
    const post = { method: 'POST', body: '{}', headers: { ...auth, 'content-type': 'application/json' } }
    // each pair taken back to back, baseline first, so background load drifts little between them
    const rows: [string, WrkResult][] = []
    const pair = async (name: string, baseName: string, base: () => Promise<WrkResult>, ours: () => Promise<WrkResult>) => {
      const b = await base()
      const o = await ours()
      rows.push([baseName, b], [name, o])
      return { base: b, ours: o }
    }
    const whoami = await pair(
      'GET /v1/whoami (API key)',
      'bare Bun.serve, same JSON',
      () => load(`${bare.bun}/v1/whoami`),
      () => load(`${api}/v1/whoami`, { headers: auth, cpuOf: service.pid }),
    )
    const listener = await pair(
      'bare node:http, same JSON',
      'bare Bun.serve, same JSON',
      () => load(`${bare.bun}/v1/whoami`),
      () => load(`${bare.node}/v1/whoami`),
    )
    const list = await pair(
      'GET /v1/emails?limit=50',
      'bare Bun.serve, same SQL',
      () => load(`${bare.bun}/v1/emails?limit=50`),
      () => load(`${api}/v1/emails?limit=50`, { headers: auth }),
    )
    const create = await pair(
      'POST /v1/inboxes',
      'bare Bun.serve, same SQL',
      () => load(`${bare.bun}/v1/inboxes`, post),
      () => load(`${api}/v1/inboxes`, post),
    )

    const row = (name: string, r: WrkResult) =>
      `${name.padEnd(30)}${String(r.rps).padStart(10)}${r.p50_ms.toFixed(2).padStart(10)}${r.p99_ms.toFixed(2).padStart(10)}${String(r.errors).padStart(8)}`
    console.log(`${'target'.padEnd(30)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'errors'.padStart(8)}`)
    for (const [name, r] of rows) console.log(row(name, r))
    const ratio = (p: { base: WrkResult; ours: WrkResult }) => (p.ours.rps / p.base.rps).toFixed(3)
    console.log(
      `\nratio whoami/bare: ${ratio(whoami)} (target >= 0.4), whoami p99 ${whoami.ours.p99_ms} ms (target < 5 ms); ` +
        `GET /v1/emails?limit=50/bare: ${ratio(list)} (target >= 0.5); POST /v1/inboxes/bare: ${ratio(create)} (target >= 0.5); ` +
        `node:http/Bun.serve on the bare JSON: ${ratio(listener)}`,
    )
    if (whoami.ours.cpu_ms_per_request !== undefined) {
      report('http whoami', {
        unit: 'request',
        cpu_ms_per_unit: whoami.ours.cpu_ms_per_request,
        headline: { requests_per_s: whoami.ours.rps, ratio: Math.round((whoami.ours.rps / whoami.base.rps) * 1000) / 1000, p99_ms: whoami.ours.p99_ms },
      })
    }
  } finally {
    await stopAll(children)
  }
}
