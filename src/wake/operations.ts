/**
 * Wake schedules (`/v1/wake`) and their runs, declared once for REST and GraphQL
 * (src/http/operation.ts); none is an MCP tool. The GraphQL field `wakes` takes no targetId
 * (`graphql.omit`), and `wakeRuns` names the wake `wakeId`.
 */
import { t } from 'elysia'
import { WAKE_MIN_INTERVAL_MINUTES } from '../account/plans'
import { listOperation, operation } from '../http/operation'
import { resourceOperations } from '../http/resource-operations'
import { IdParam, OneOf } from '../http/schema'
import { NewWake, TARGET_TYPES, Wake, WakePatch, WakeRun, WAKE_LATE_AFTER_SECONDS, WAKE_RUN_ATTEMPTS, WAKE_SCHEDULER_EVERY_MS } from './model'
import { createWake, deleteWake, getWake, listRuns, listWakes, presentRun, presentWake, runWakeNow, updateWake } from './service'

const TAG = 'Wake'

const wake = resourceOperations('/v1/wake', { tag: TAG, resource: 'wake', output: Wake, present: presentWake, type: 'Wake', mcp: false })

const RUNS =
  `A run is delivered to the target with a run_id that stays the same across retries (${WAKE_RUN_ATTEMPTS} attempts with back-off): an endpoint gets a POST signed like webhooks (webhook-id and X-Wake-Run-Id are the run_id), ` +
  'a function an invocation with the same JSON body, an agent connection a wake.command change on its feed. ' +
  `Due slots are fired within ${WAKE_SCHEDULER_EVERY_MS / 1000} seconds; slots missed while the service was down fire once, marked late (more than ${WAKE_LATE_AFTER_SECONDS} s after their time). ` +
  `A one-shot wake (at) disables itself once its run is delivered. Repeating wakes run at most every ${WAKE_MIN_INTERVAL_MINUTES} minute; the plan caps enabled wakes (GET /v1/account limits.wakes_active_max).`

export const wakeOperations = [
  operation({
    name: 'create_wake',
    method: 'POST',
    path: '/v1/wake',
    tag: TAG,
    summary: 'Schedule a wake command',
    description: `201 when created; 200 when dedupe_key named an existing wake, which is updated instead. Cron is evaluated in time_zone with daylight saving time (croner). ${RUNS}`,
    input: NewWake,
    output: Wake,
    status: 201,
    mayFindExisting: true,
    mcp: false,
    async handle({ ctx, auth, status }, body) {
      const { row, created } = await createWake(ctx.sql, auth.orgId, body)
      if (!created) status?.(200)
      return presentWake(row)
    },
  }),
  wake.list({
    name: 'list_wakes',
    summary: 'List wakes, newest first',
    input: t.Object({
      enabled: t.Optional(t.Boolean()),
      target_type: t.Optional(OneOf(TARGET_TYPES)),
      target_id: t.Optional(t.String({ format: 'uuid' })),
    }),
    graphql: {
      field: 'wakes',
      description: 'Wakes, newest first (as GET /v1/wake); the filters combine.',
      args: { target_type: 'String' },
      input: ['enabled', 'target_type'],
    },
    scope: () => 'wake',
    fetch: listWakes,
  }),
  wake.get({ name: 'get_wake', summary: 'Read a wake', graphql: 'wake', find: getWake }),
  wake.update({
    name: 'update_wake',
    summary: 'Change a wake',
    description: 'A new schedule, or enabling a disabled wake, schedules the next run from now.',
    input: WakePatch,
    change: (sql, orgId, id, patch) => updateWake(sql, orgId, id, patch),
  }),
  wake.delete({ name: 'delete_wake', summary: 'Delete a wake and its runs', remove: deleteWake }),
  operation({
    name: 'run_wake',
    method: 'POST',
    path: '/v1/wake/:id/run',
    tag: TAG,
    summary: 'Run a wake now',
    description: `Outside its schedule, enabled or not; manual is true. ${RUNS}`,
    params: IdParam,
    resource: 'wake',
    output: WakeRun,
    status: 202,
    mcp: false,
    handle: async ({ ctx, auth }, { id }) => presentRun(await runWakeNow(ctx.sql, auth.orgId, id)),
  }),
  listOperation({
    name: 'list_wake_runs',
    method: 'GET',
    path: '/v1/wake/:id/runs',
    tag: TAG,
    summary: "A wake's runs, newest first",
    params: IdParam,
    resource: 'wake',
    mcp: false,
    graphql: { field: 'wakeRuns', type: 'WakeRun', description: "A wake's runs, newest first (as GET /v1/wake/{id}/runs).", params: { id: 'wakeId' } },
    list: {
      item: WakeRun,
      scope: (_call, { id }) => `wake-runs:${id}`,
      async fetch({ ctx, auth }, { id }, page) {
        // an unknown wake is 404, not an empty list
        await getWake(ctx.sql, auth.orgId, id)
        return listRuns(ctx.sql, auth.orgId, id, page)
      },
      present: presentRun,
    },
  }),
]
