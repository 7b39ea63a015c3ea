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
 * - fairness.ts: one organization's trivial function alone, then while another organization
 *   keeps infinite loops in flight (issue 32), p50 and p99 of each;
 * - x402.ts: challenge to settled on anvil (sequential and 20 payers at once), next to a bare
 *   viem transferWithAuthorization round trip to the same anvil;
 * - changes.ts: 20 consumers long-polling GET /v1/changes while mail arrives at 200 msg/s, next
 *   to 20 long-polling GET /v1/emails?wait=, 250-to-response latency and exactly-once;
 * - mailbox.ts: lists, threads, a cursor walk and search in a mailbox of 100,000 messages
 *   (BENCH_MAILBOX_MESSAGES) next to one of 1,000, and SMTP ingest of replies into each;
 * - jobs.ts: the job queue's dead rows and size under sustained churn, without and with the
 *   worker's statistics job;
 * - processes: the fan-out load at 1,500 msg/s offered to one process with every role and to
 *   two processes, deliveries/s of each (issue 19 item 6);
 * - contacts.ts: inbound stores whose senders are all contacts of the recipient (the counters
 *   move in the store's statement) next to the same stores without contacts;
 * - waiters.ts: 10,000 long-polls over 1,000 inboxes and 10,000 idle SMTP sessions held by one
 *   process, memory per waiter and per session, and who wakes for one message.
 *
 * At the end, guard.ts sets each path's CPU per unit of work (http whoami, smtp ingest, fan-out,
 * outbound send, waiters, search) against the accepted figures in accepted.json and flags a path
 * more than 20% slower; BENCH_ACCEPT=1 makes this run's figures the accepted ones.
 *
 * Every server and every load generator runs in a process of its own. BENCH_ONLY=http, smtp,
 * fanout, outbound, functions, fairness, x402, changes, processes, waiters, mailbox, jobs or contacts runs one
 * section (several: separated by commas).
 */
import postgres from 'postgres'
import { connectUrl } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { httpBench } from './http'
import { smtpBench } from './smtp'
import { fanoutBench, processesBench } from './fanout'
import { waitersBench } from './waiters'
import { outboundBench } from './outbound'
import { functionsBench } from './functions'
import { fairnessBench } from './fairness'
import { x402Bench } from './x402'
import { changesBench } from './changes'
import { mailboxBench } from './mailbox'
import { jobsBench } from './jobs'
import { contactsBench } from './contacts'
import { summarize } from './guard'

const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
/** BENCH_ONLY: one section, or several separated by commas */
const only = process.env.BENCH_ONLY?.split(',')
const run = (section: string) => !only || only.includes(section)

// the HTTP section's load generator is wrk, a program of its own: say so before anything starts
if (run('http') && !Bun.which('wrk')) {
  console.error(
    'make bench: the HTTP section loads the service with wrk, which is not installed (Debian: apt-get install wrk); BENCH_ONLY picks other sections',
  )
  process.exit(2)
}

const dbName = `agent_mail_bench_${Date.now().toString(36)}`
const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
await admin.unsafe(`create database ${dbName}`)
const dbUrl = Object.assign(new URL(serverUrl), { pathname: `/${dbName}` }).toString()
const sql = connectUrl(dbUrl, 2)
try {
  await migrate(sql)
  if (run('http')) await httpBench(sql, dbUrl)
  if (run('smtp')) await smtpBench(sql, dbUrl)
  if (run('fanout')) await fanoutBench(sql, dbUrl)
  if (run('outbound')) await outboundBench(sql, dbUrl)
  if (run('functions')) await functionsBench(sql, dbUrl)
  if (run('fairness')) await fairnessBench()
  if (run('x402')) await x402Bench(sql, dbUrl)
  if (run('changes')) await changesBench(sql, dbUrl)
  if (run('processes')) await processesBench(sql, dbUrl)
  if (run('waiters')) await waitersBench(sql, dbUrl)
  if (run('mailbox')) await mailboxBench(sql, dbUrl)
  if (run('jobs')) await jobsBench(sql)
  if (run('contacts')) await contactsBench(sql)
  summarize()
} finally {
  await sql.end({ timeout: 5 })
  await admin.unsafe(`drop database if exists ${dbName} with (force)`)
  await admin.end({ timeout: 5 })
}
