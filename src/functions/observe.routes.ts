/** Functions: invocations, logs, usage, series, activity, test runs and dry runs. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { ENVELOPE, MetaSchema, Ok, Page, Paged } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { Nullable, OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { Activity, FullInvocation, FunctionId, Invocation, LogLineSchema, Outcome } from './model'
import {
  dryRun,
  getInvocation,
  invocationSeries,
  listActivity,
  listInvocations,
  listLogs,
  presentActivity,
  presentInvocation,
  presentLog,
  startTestRun,
  testRunTrace,
  usage,
} from './observe'

const Usage = t.Object({
  function_id: Nullable(t.String({ format: 'uuid' })),
  since: t.String({ format: 'date-time' }),
  invocations: t.Integer(),
  by_outcome: t.Record(t.String(), t.Integer(), { description: 'invocations by outcome' }),
  cpu_ms: t.Number(),
  wall_ms: t.Number(),
  log_lines: t.Integer(),
})
const since = (value?: string) => (value ? parseTimestamp('since', value) : undefined)

export function functionObserveRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/functions', tags: ['Functions'] })
    .use(authenticated(ctx))
    .get('/usage', ({ auth, query }) => usage(ctx.sql, auth.orgId, null, since(query.since)), {
      query: t.Object({ since: t.Optional(Timestamp('count from this instant; default 30 days ago')) }),
      response: { 200: Ok(Usage) },
      detail: { summary: 'Usage of all functions of the organization' },
    })
    .get(
      '/invocation-series',
      ({ auth, query }) => invocationSeries(ctx.sql, auth.orgId, { functionId: query.function_id, since: since(query.since), bucket: query.bucket }),
      {
        query: t.Object({
          function_id: t.Optional(t.String({ format: 'uuid' })),
          since: t.Optional(Timestamp('first bucket; default 30 days ago')),
          bucket: t.Optional(OneOf(['hour', 'day'] as const, { description: 'bucket width; default day' })),
        }),
        response: {
          200: Ok(
            t.Object({
              function_id: Nullable(t.String({ format: 'uuid' })),
              bucket: t.String(),
              since: t.String({ format: 'date-time' }),
              points: t.Array(
                t.Object({ start: t.String({ format: 'date-time' }), invocations: t.Integer(), ok: t.Integer(), failed: t.Integer(), cpu_ms: t.Number() }),
              ),
            }),
          ),
        },
        detail: { summary: 'Invocations over time', description: 'Per bucket, empty buckets included; all functions, or one with function_id.' },
      },
    )
    .get('/:id/usage', ({ auth, params, query }) => usage(ctx.sql, auth.orgId, params.id, since(query.since)), {
      params: FunctionId,
      query: t.Object({ since: t.Optional(Timestamp('count from this instant; default 30 days ago')) }),
      response: { 200: Ok(Usage) },
      detail: { summary: 'Usage of a function' },
    })
    .get(
      '/:id/invocations',
      async ({ auth, params, query }) => {
        const scope = `invocations:${params.id}`
        return cursors(ctx).read(
          scope,
          query,
          page => listInvocations(ctx.sql, auth.orgId, params.id, page, { outcome: query.outcome, since: since(query.since) }),
          presentInvocation,
        )
      },
      {
        params: FunctionId,
        query: t.Object({ ...pageQuery(), outcome: t.Optional(Outcome), since: t.Optional(Timestamp('invocations at or after this instant')) }),
        response: { 200: Paged(Invocation) },
        detail: {
          summary: 'Invocations of a function, newest first',
          description:
            'outcome: ok (the function answered; see response_status), exception (it threw, or returned no Response, or its promise could never settle), exceeded_cpu, exceeded_memory (128 MiB), exceeded_wall_clock, exceeded_limit (log bytes, subrequests, response size, stack depth), crashed (the sandbox died; the delivery is retried).',
        },
      },
    )
    .get('/:id/invocations/:invocationId', ({ auth, params }) => getInvocation(ctx.sql, auth.orgId, params.id, params.invocationId), {
      params: t.Object({ id: t.String({ format: 'uuid' }), invocationId: t.String({ format: 'uuid' }) }),
      response: { 200: Ok(FullInvocation) },
      detail: { summary: 'One invocation, with its exception stack and captured logs' },
    })
    .get(
      '/:id/logs',
      async ({ auth, params, query }) => {
        const scope = `logs:${params.id}`
        const p = await cursors(ctx).read(scope, query, page => listLogs(ctx.sql, auth.orgId, params.id, page), presentLog)
        // the spec names next_cursor in the data; meta.cursor carries the same value, as in every list
        return new Page({ logs: p.data, next_cursor: p.meta.cursor } as never, p.meta) as never
      },
      {
        params: FunctionId,
        query: t.Object(pageQuery(500, 100)),
        response: {
          200: t.Object(
            {
              data: t.Object({
                logs: t.Array(LogLineSchema),
                next_cursor: Nullable(t.String({ description: 'pass as cursor for older lines; also in meta.cursor' })),
              }),
              meta: MetaSchema,
            },
            { [ENVELOPE]: 'paged' },
          ),
        },
        detail: {
          summary: 'Captured console output of a function, newest first',
          description: 'next_cursor (and meta.cursor) is passed back as cursor for the next page.',
        },
      },
    )
    .get(
      '/:id/activity',
      async ({ auth, params, query }) => {
        const scope = `activity:${params.id}`
        return cursors(ctx).read(
          scope,
          query,
          page => listActivity(ctx.sql, auth.orgId, params.id, page, { type: query.type, emailId: query.email_id, deliveryId: query.delivery_id }),
          presentActivity,
        )
      },
      {
        params: FunctionId,
        query: t.Object({
          ...pageQuery(),
          type: t.Optional(OneOf(['email.sent', 'email.replied'] as const)),
          email_id: t.Optional(t.String({ format: 'uuid' })),
          delivery_id: t.Optional(t.String({ format: 'uuid' })),
        }),
        response: { 200: Paged(Activity) },
        detail: {
          summary: 'Outbound effects of a function',
          description:
            'Sends the function made through SERVICE_API_BASE_URL: email.replied (with in_reply_to_email_id) or email.sent, with the sent email_id and the delivery that invoked it.',
        },
      },
    )
    .post('/:id/test', ({ auth, params }) => startTestRun(ctx, auth.orgId, params.id), {
      params: FunctionId,
      response: {
        200: Ok(t.Object({ run_id: t.String({ format: 'uuid' }), email_id: t.String({ format: 'uuid' }), recipient: t.String(), trace_url: t.String() })),
      },
      detail: {
        summary: 'Send a test email to a function',
        description:
          'A real email through the inbound path (parsed, authenticated, stored, routed, delivered as a job) to an address that routes to the function. 409 conflict when no address does (route it first). Follow it with the trace.',
      },
    })
    .get('/:id/test-runs/:runId/trace', ({ auth, params }) => testRunTrace(ctx.sql, auth.orgId, params.id, params.runId), {
      params: t.Object({ id: t.String({ format: 'uuid' }), runId: t.String({ format: 'uuid' }) }),
      response: {
        200: Ok(
          t.Object({
            run_id: t.String({ format: 'uuid' }),
            email_id: Nullable(t.String({ format: 'uuid' })),
            complete: t.Boolean({ description: 'the delivery reached a final status' }),
            steps: t.Array(
              t.Object(
                {
                  step: t.String({ description: 'received, stored, routed, invoked, log, outbound, outcome, delivery' }),
                  at: t.String({ format: 'date-time' }),
                },
                { additionalProperties: true },
              ),
            ),
          }),
        ),
      },
      detail: {
        summary: 'End-to-end trace of a test run',
        description:
          'Each step with its time, in causal order (received, stored, routed, then per invocation: invoked, log lines, outbound sends, outcome; then the delivery status); call again until complete.',
      },
    })
    .post('/:id/dry-run', ({ auth, params, body }) => dryRun(ctx, auth.orgId, params.id, body.email_id, body.deployment_id), {
      params: FunctionId,
      body: t.Object({
        email_id: t.String({ format: 'uuid', description: 'a stored email of the organization' }),
        deployment_id: t.Optional(t.String({ format: 'uuid', description: 'default: the current deployment' })),
      }),
      response: {
        200: Ok(
          t.Object({
            deployment_id: t.String({ format: 'uuid' }),
            outcome: Outcome,
            cpu_ms: t.Number(),
            wall_ms: t.Number(),
            response: Nullable(t.Object({ status: t.Integer(), headers: t.Record(t.String(), t.String()), body: t.String() })),
            exception: Nullable(t.Object({ name: t.String(), message: t.String(), stack: Nullable(t.String()) })),
            logs: t.Array(t.Object({ level: t.String(), message: t.String(), at: t.String() })),
            captured_sends: t.Array(t.Unknown(), { description: 'send-mail bodies the function posted: captured, not sent' }),
          }),
        ),
      },
      detail: {
        summary: 'Run a stored email through a deployment, with no side effects',
        description:
          'Beyond the spec. The function receives the email event as a delivery would carry it (signed; event id evt_dry_...). Sends to SERVICE_API_BASE_URL/send-mail are captured and returned, other API writes are refused (403), reads are served; fetches to other hosts are made for GET and HEAD, and refused (403, not sent) for any other method. Nothing is recorded as a delivery, invocation or log.',
      },
    })
}
