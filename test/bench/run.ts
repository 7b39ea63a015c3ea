/**
 * `make bench`: creates a scratch database on the local PostgreSQL, runs the sections and drops
 * the database again. Each section prints its own figures, targets and ratios:
 *
 * - http.ts: authenticated GET /v1/whoami against a bare Bun.serve "hello";
 * - smtp.ts: SMTP ingest (10 KB DKIM-signed messages, 1/20/100 sessions) through the full
 *   durable path, next to nodemailer's smtp-server and our listener with no-op hooks;
 * - fanout.ts: inbound mail to webhook delivery (the service with all roles, a loopback
 *   receiver), 250-to-arrival latency and deliveries/s at steady SMTP rates, next to fetch
 *   POSTing straight to the receiver;
 * - outbound.ts: sustained POST /v1/send-mail through an SMTP relay, next to nodemailer sending
 *   prebuilt messages straight to the same relay;
 * - functions.ts: function invocation latency and throughput next to a bare `new Function`, and
 *   SMTP 250 to function completed at 100 msg/s;
 * - x402.ts: challenge to settled on anvil (sequential and 20 payers at once), next to a bare
 *   viem transferWithAuthorization round trip to the same anvil;
 * - changes.ts: 20 consumers long-polling GET /v1/changes while mail arrives at 200 msg/s, next
 *   to 20 long-polling GET /v1/emails?wait=, 250-to-response latency and exactly-once.
 *
 * Every server and every load generator runs in a process of its own. BENCH_ONLY=http, smtp,
 * fanout, outbound, functions, x402 or changes runs one section.
 */
import postgres from 'postgres'
import { connectUrl } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { httpBench } from './http'
import { smtpBench } from './smtp'
import { fanoutBench } from './fanout'
import { outboundBench } from './outbound'
import { functionsBench } from './functions'
import { x402Bench } from './x402'
import { changesBench } from './changes'

const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const only = process.env.BENCH_ONLY

const dbName = `agent_mail_bench_${Date.now().toString(36)}`
const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
await admin.unsafe(`create database ${dbName}`)
const dbUrl = Object.assign(new URL(serverUrl), { pathname: `/${dbName}` }).toString()
const sql = connectUrl(dbUrl, 2)
try {
  await migrate(sql)
  if (!only || only === 'http') await httpBench(sql, dbUrl)
  if (!only || only === 'smtp') await smtpBench(sql, dbUrl)
  if (!only || only === 'fanout') await fanoutBench(sql, dbUrl)
  if (!only || only === 'outbound') await outboundBench(sql, dbUrl)
  if (!only || only === 'functions') await functionsBench(sql, dbUrl)
  if (!only || only === 'x402') await x402Bench(sql, dbUrl)
  if (!only || only === 'changes') await changesBench(sql, dbUrl)
} finally {
  await sql.end({ timeout: 5 })
  await admin.unsafe(`drop database if exists ${dbName} with (force)`)
  await admin.end({ timeout: 5 })
}
