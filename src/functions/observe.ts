/**
 * What a developer reads about their functions: invocations, logs, usage, the invocation
 * series, outbound activity; the test run (a real email through the inbound path) with its
 * trace; and the dry run, which runs a stored email through a deployment with no side effects.
 */
import { findEmail, findEmailWithRaw } from '../mail/email-queries'
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Sql } from '../db/client'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { ingest } from '../mail/inbound/ingest'
import { parseMail } from '../mail/inbound/parse'
import { emailEvent } from '../webhooks/payload'
import { signedHeaders } from '../webhooks/signing'
import { functionAddressFacts, functionDeliveriesOf } from '../webhooks/queries'
import { cachedSigningSecrets } from '../account/webhook-secret'
import { deliveryUrl } from './delivery'
import { invokeFunction } from './run'
import { getFunction } from './service'
import type { Outcome } from './sandbox/protocol'
import { deploymentStatus } from './deployment-queries'
import {
  type ActivityRow,
  activityOfInvocation,
  activityPage,
  type InvocationRow,
  invocationBuckets,
  invocationById,
  invocationsOfEmail,
  invocationsPage,
  invocationTotals,
  type LogRow,
  logLineCount,
  logsOfInvocation,
  logsPage,
} from './invocation-queries'
import { insertTestRun, setTestRunEmail, testRunById } from './test-run-queries'

export const presentInvocation = (r: InvocationRow) => ({
  id: r.id,
  function_id: r.function_id,
  deployment_id: r.deployment_id,
  delivery_id: r.delivery_id,
  email_id: r.email_id,
  outcome: r.outcome,
  cpu_ms: r.cpu_ms,
  wall_ms: r.wall_ms,
  request_method: r.request_method,
  request_url: r.request_url,
  response_status: r.response_status,
  exception_name: r.exception_name,
  exception_message: r.exception_message,
  logs_truncated: r.logs_truncated,
  subrequests: r.subrequests,
  created_at: iso(r.created_at)!,
})

export const presentLog = (r: LogRow) => ({ id: r.id, invocation_id: r.invocation_id, level: r.level, message: r.message, logged_at: iso(r.logged_at)! })

export async function listInvocations(sql: Sql, orgId: string, functionId: string, page: PageRequest, f: { outcome?: Outcome; since?: Date }) {
  await getFunction(sql, orgId, functionId)
  return invocationsPage(sql, orgId, functionId, page, f)
}

/** GraphQL's loaders read a page of the invocations of each of several functions from here. */

export async function getInvocation(sql: Sql, orgId: string, functionId: string, id: string) {
  await getFunction(sql, orgId, functionId)
  const row = await invocationById(sql, orgId, functionId, id)
  if (!row) throw errors.notFound('invocation')
  const logs = await logsOfInvocation(sql, id)
  return { ...presentInvocation(row), exception_stack: row.exception_stack, logs: logs.map(presentLog) }
}

export async function listLogs(sql: Sql, orgId: string, functionId: string, page: PageRequest) {
  await getFunction(sql, orgId, functionId)
  return logsPage(sql, orgId, functionId, page)
}

export const presentActivity = (r: ActivityRow) => ({ ...r, created_at: iso(r.created_at)! })

export async function listActivity(
  sql: Sql,
  orgId: string,
  functionId: string,
  page: PageRequest,
  f: { type?: string; emailId?: string; deliveryId?: string },
) {
  await getFunction(sql, orgId, functionId)
  return activityPage(sql, orgId, functionId, page, f)
}

const DAY_MS = 86_400_000

/** Invocations, outcomes and time used since `since` (default 30 days), for one function or all. */
export async function usage(sql: Sql, orgId: string, functionId: string | null, since?: Date) {
  if (functionId) await getFunction(sql, orgId, functionId)
  const from = since ?? new Date(Date.now() - 30 * DAY_MS)
  const rows = await invocationTotals(sql, orgId, functionId, from)
  const logLines = await logLineCount(sql, orgId, functionId, from)
  const byOutcome = Object.fromEntries(rows.map(r => [r.outcome, r.n]))
  return {
    function_id: functionId,
    since: iso(from)!,
    invocations: rows.reduce((n, r) => n + r.n, 0),
    by_outcome: byOutcome,
    cpu_ms: Math.round(rows.reduce((n, r) => n + r.cpu, 0) * 100) / 100,
    wall_ms: Math.round(rows.reduce((n, r) => n + r.wall, 0) * 100) / 100,
    log_lines: logLines,
  }
}

/** Invocations per bucket (hour or day) from `since` (default 30 days ago) to now, empty buckets included. */
export async function invocationSeries(sql: Sql, orgId: string, q: { functionId?: string; since?: Date; bucket?: 'hour' | 'day' }) {
  if (q.functionId) await getFunction(sql, orgId, q.functionId)
  const bucket = q.bucket ?? 'day'
  const from = q.since ?? new Date(Date.now() - 30 * DAY_MS)
  const rows = await invocationBuckets(sql, orgId, q.functionId, bucket, from)
  return { function_id: q.functionId ?? null, bucket, since: iso(from)!, points: rows.map(r => ({ ...r, start: iso(r.start)! })) }
}

/** An address whose mail reaches the function's endpoint, for its test email. */
async function testRecipient(sql: Sql, ctx: AppContext, orgId: string, functionId: string): Promise<string> {
  const row = await functionAddressFacts(sql, orgId, functionId)
  const none = () =>
    errors.conflict(
      'function: no address routes to it; route it first (PUT /v1/functions/{id}/route) to a domain, or to the fallback with a managed inbox or a verified domain without its own endpoint',
    )
  if (!row?.enabled) throw none()
  if (row.is_route_target) {
    if (row.route) return row.route
    throw none()
  }
  if (row.domain) return `function-test@${row.domain}`
  if (row.inbox) return row.inbox
  if (row.free_domain) return `function-test@${row.free_domain}`
  void ctx
  throw none()
}

/** POST /functions/{id}/test: a real email through the inbound path (parse, authenticate, store, route, deliver). */
export async function startTestRun(ctx: AppContext, orgId: string, functionId: string) {
  const fn = await getFunction(ctx.sql, orgId, functionId)
  if (!fn.current_deployment_id) throw errors.conflict('function: it has no current deployment; deploy it first')
  const recipient = await testRecipient(ctx.sql, ctx, orgId, functionId)
  const runId = randomUUIDv7()
  const sender = `function-test@${ctx.config.SMTP_HOSTNAME}`
  const raw = [
    `From: Function test <${sender}>`,
    `To: ${recipient}`,
    `Subject: Test of function ${fn.name}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <test-${runId}@${ctx.config.SMTP_HOSTNAME}>`,
    `X-Function-Test-Run: ${runId}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `This is a test email for function ${fn.name} (run ${runId}).`,
    '',
  ].join('\r\n')
  await insertTestRun(ctx.sql, { id: runId, orgId, functionId, recipient })
  const result = await ingest(ctx, {
    raw: new TextEncoder().encode(raw),
    mailFrom: sender,
    rcptTo: [recipient],
    remoteIp: '127.0.0.1',
    helo: ctx.config.SMTP_HOSTNAME,
    tls: false,
  })
  const email = result.stored.find(e => e.orgId === orgId)
  if (!email) throw errors.conflict(`function: the test email to ${recipient} was not stored${result.refused.length ? ' (storage full)' : ''}`)
  await setTestRunEmail(ctx.sql, runId, email.id)
  return { run_id: runId, email_id: email.id, recipient, trace_url: `/v1/functions/${functionId}/test-runs/${runId}/trace` }
}

/** The trace of a test run: each step with its time, in causal order, as far as it has got. */
export async function testRunTrace(sql: Sql, orgId: string, functionId: string, runId: string) {
  await getFunction(sql, orgId, functionId)
  const run = await testRunById(sql, orgId, functionId, runId)
  if (!run) throw errors.notFound('test run')
  const steps: { step: string; at: string; [k: string]: unknown }[] = [{ step: 'received', at: iso(run.created_at)!, recipient: run.recipient }]
  let done = false
  if (run.email_id) {
    const email = await findEmail(sql, { id: run.email_id }, ['received_at'])
    if (email) steps.push({ step: 'stored', at: iso(email.received_at)!, email_id: run.email_id })
    const deliveries = await functionDeliveriesOf(sql, run.email_id, functionId)
    for (const d of deliveries) steps.push({ step: 'routed', at: iso(d.created_at)!, delivery_id: d.id })
    const invocations = await invocationsOfEmail(sql, run.email_id, functionId)
    for (const i of invocations) {
      const ended = i.created_at.getTime()
      steps.push({ step: 'invoked', at: iso(new Date(ended - i.wall_ms))!, invocation_id: i.id, delivery_id: i.delivery_id })
      const logs = await logsOfInvocation(sql, i.id)
      for (const l of logs) steps.push({ step: 'log', at: iso(l.logged_at)!, invocation_id: i.id, level: l.level, message: l.message })
      const activity = await activityOfInvocation(sql, i.id)
      for (const a of activity) steps.push({ step: 'outbound', at: iso(a.created_at)!, invocation_id: i.id, type: a.type, email_id: a.email_id })
      steps.push({
        step: 'outcome',
        at: iso(i.created_at)!,
        invocation_id: i.id,
        outcome: i.outcome,
        response_status: i.response_status,
        exception_message: i.exception_message,
      })
    }
    const last = deliveries.at(-1)
    if (last && last.status !== 'pending') {
      steps.push({
        step: 'delivery',
        at: iso(last.updated_at)!,
        delivery_id: last.id,
        status: last.status,
        last_error_code: last.last_error_code,
        attempt_count: last.attempt_count,
      })
      done = true
    }
  }
  return { run_id: run.id, email_id: run.email_id, complete: done, steps }
}

/**
 * POST /functions/{id}/dry-run: the stored email as the function would receive it, run through a
 * deployment (default current) with no side effects: sends are captured and returned, nothing is
 * recorded as a delivery or an invocation.
 */
export async function dryRun(ctx: AppContext, orgId: string, functionId: string, emailId: string, deploymentId?: string) {
  await getFunction(ctx.sql, orgId, functionId)
  const row = await findEmailWithRaw(ctx.sql, { id: emailId, orgId }, [
    'id',
    'thread_id',
    'event_type',
    'rcpt_to',
    'mail_from',
    'size_bytes',
    'received_at',
    'auth',
    'extracted_text',
    'extracted_html',
  ])
  if (!row?.raw) throw errors.notFound('email_id')
  if (deploymentId) {
    const status = await deploymentStatus(ctx.sql, orgId, functionId, deploymentId)
    if (!status) throw errors.notFound('deployment_id')
    if (status !== 'deployed') throw errors.validation('deployment_id', 'is a failed deployment; it cannot run')
  }
  const mail = await parseMail(new Uint8Array(row.raw))
  const eventId = `evt_dry_${randomUUIDv7().replaceAll('-', '')}`
  const event = emailEvent(
    eventId,
    {
      id: row.id,
      orgId,
      threadId: row.thread_id,
      eventType: row.event_type as never,
      rcptTo: row.rcpt_to,
      mailFrom: row.mail_from ?? '',
      sizeBytes: row.size_bytes,
      receivedAt: row.received_at,
      auth: row.auth,
      extracted: { text: row.extracted_text, html: row.extracted_html },
    },
    mail,
  )
  const body = JSON.stringify({ ...event, delivery: { attempt: 1 }, dry_run: true })
  const headers = signedHeaders(await cachedSigningSecrets(ctx, orgId), eventId, body)
  const invocation = await invokeFunction(ctx, {
    orgId,
    functionId,
    deploymentId,
    dryRun: true,
    request: {
      method: 'POST',
      url: deliveryUrl(functionId),
      headers: [['content-type', 'application/json'], ...Object.entries(headers)],
      body: Buffer.from(body).toString('base64'),
    },
  })
  if (!invocation) throw errors.conflict('function: it has no current deployment')
  const r = invocation.result
  return {
    deployment_id: invocation.deploymentId,
    outcome: r.outcome,
    cpu_ms: r.cpuMs,
    wall_ms: r.wallMs,
    response: r.response
      ? {
          status: r.response.status,
          headers: Object.fromEntries(r.response.headers),
          body: Buffer.from(r.response.body, 'base64')
            .toString('utf8')
            .slice(0, 64 * 1024),
        }
      : null,
    exception: r.error ? { name: r.error.name, message: r.error.message, stack: r.error.stack } : null,
    logs: r.logs,
    captured_sends: invocation.scope.captured.map(c => c.request),
  }
}
