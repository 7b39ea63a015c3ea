/** Wake schedules: `/v1/wake` and its runs. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { OneOf } from '../http/schema'
import { WAKE_MIN_INTERVAL_MINUTES } from '../account/plans'
import { NewWake, TARGET_TYPES, Wake, WakePatch, WakeRun, WAKE_LATE_AFTER_SECONDS, WAKE_RUN_ATTEMPTS, WAKE_SCHEDULER_EVERY_MS } from './model'
import { createWake, deleteWake, getWake, listRuns, listWakes, presentRun, presentWake, runWakeNow, updateWake } from './service'

const Id = t.Object({ id: t.String({ format: 'uuid' }) })

const RUNS =
  `A run is delivered to the target with a run_id that stays the same across retries (${WAKE_RUN_ATTEMPTS} attempts with back-off): an endpoint gets a POST signed like webhooks (webhook-id and X-Wake-Run-Id are the run_id), ` +
  'a function an invocation with the same JSON body, an agent connection a wake.command change on its feed. ' +
  `Due slots are fired within ${WAKE_SCHEDULER_EVERY_MS / 1000} seconds; slots missed while the service was down fire once, marked late (more than ${WAKE_LATE_AFTER_SECONDS} s after their time). ` +
  `A one-shot wake (at) disables itself once its run is delivered. Repeating wakes run at most every ${WAKE_MIN_INTERVAL_MINUTES} minute; the plan caps enabled wakes (GET /v1/account limits.wakes_active_max).`

export function wakeRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/wake', tags: ['Wake'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        const { row, created } = await createWake(ctx.sql, auth.orgId, body)
        set.status = created ? 201 : 200
        return presentWake(row)
      },
      {
        body: NewWake,
        response: { 200: Ok(Wake), 201: Ok(Wake) },
        detail: {
          summary: 'Schedule a wake command',
          description: `201 when created; 200 when dedupe_key named an existing wake, which is updated instead. Cron is evaluated in time_zone with daylight saving time (croner). ${RUNS}`,
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        return cursors(ctx).read('wake', query, page => listWakes(ctx.sql, auth.orgId, page, query), presentWake)
      },
      {
        query: t.Object({
          ...pageQuery(),
          enabled: t.Optional(t.Boolean()),
          target_type: t.Optional(OneOf(TARGET_TYPES)),
          target_id: t.Optional(t.String({ format: 'uuid' })),
        }),
        response: { 200: Paged(Wake) },
        detail: { summary: 'List wakes, newest first' },
      },
    )
    .get('/:id', async ({ auth, params }) => presentWake(await getWake(ctx.sql, auth.orgId, params.id)), {
      params: Id,
      response: { 200: Ok(Wake) },
      detail: { summary: 'Read a wake' },
    })
    .patch('/:id', async ({ auth, params, body }) => presentWake(await updateWake(ctx.sql, auth.orgId, params.id, body)), {
      params: Id,
      body: WakePatch,
      response: { 200: Ok(Wake) },
      detail: { summary: 'Change a wake', description: 'A new schedule, or enabling a disabled wake, schedules the next run from now.' },
    })
    .delete('/:id', ({ auth, params }) => deleteWake(ctx.sql, auth.orgId, params.id), {
      params: Id,
      response: { 200: Ok(t.Object({ id: t.String({ format: 'uuid' }), deleted: t.Literal(true) })) },
      detail: { summary: 'Delete a wake and its runs' },
    })
    .post(
      '/:id/run',
      async ({ auth, params, set }) => {
        set.status = 202
        return presentRun(await runWakeNow(ctx.sql, auth.orgId, params.id))
      },
      {
        params: Id,
        response: { 202: Ok(WakeRun) },
        detail: { summary: 'Run a wake now', description: `Outside its schedule, enabled or not; manual is true. ${RUNS}` },
      },
    )
    .get(
      '/:id/runs',
      async ({ auth, params, query }) => {
        await getWake(ctx.sql, auth.orgId, params.id)
        return cursors(ctx).read(`wake-runs:${params.id}`, query, page => listRuns(ctx.sql, auth.orgId, params.id, page), presentRun)
      },
      { params: Id, query: t.Object(pageQuery()), response: { 200: Paged(WakeRun) }, detail: { summary: "A wake's runs, newest first" } },
    )
}
