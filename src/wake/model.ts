/** Schemas and limits of wake schedules. */
import { t } from 'elysia'
import { WAKE_MIN_INTERVAL_MINUTES } from '../account/plans'
import { Nullable, OneOf } from '../http/schema'
import { Timestamp } from '../http/timestamps'

/** A slot fired later than this after its time is marked late (missed while the service was down). */
export const WAKE_LATE_AFTER_SECONDS = 60
/** How often the scheduler looks for due wakes: runs fire within this of their time. */
export const WAKE_SCHEDULER_EVERY_MS = 10_000
export const WAKE_RUN_ATTEMPTS = 5

export const TARGET_TYPES = ['function', 'endpoint', 'agent_connection'] as const

const Target = t.Object(
  { type: OneOf(TARGET_TYPES), id: t.String({ format: 'uuid', description: 'the function, webhook endpoint or agent connection' }) },
  { additionalProperties: false },
)

const ScheduleIn = t.Object(
  {
    at: t.Optional(Timestamp('once, at this instant')),
    cron: t.Optional(t.String({ minLength: 9, maxLength: 100, description: 'five fields (minute hour day month weekday), evaluated in time_zone' })),
    time_zone: t.Optional(t.String({ maxLength: 64, description: 'IANA name such as Europe/Paris; default UTC; only with cron' })),
    every_minutes: t.Optional(
      t.Integer({ minimum: WAKE_MIN_INTERVAL_MINUTES, maximum: 527_040, description: `every this many minutes (at least ${WAKE_MIN_INTERVAL_MINUTES})` }),
    ),
  },
  { additionalProperties: false, description: 'exactly one of at, cron (with time_zone) and every_minutes' },
)

const Command = t.Object(
  { name: t.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.:-]+$' }), payload: t.Optional(t.Unknown({ description: 'any JSON, up to 64 KB' })) },
  { additionalProperties: false },
)

export const NewWake = t.Object(
  {
    target: Target,
    schedule: ScheduleIn,
    command: Command,
    dedupe_key: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'a second create with the same key updates that wake instead' })),
    enabled: t.Optional(t.Boolean({ description: 'default true' })),
  },
  { additionalProperties: false },
)

export const WakePatch = t.Object(
  { target: t.Optional(Target), schedule: t.Optional(ScheduleIn), command: t.Optional(Command), enabled: t.Optional(t.Boolean()) },
  { additionalProperties: false, minProperties: 1 },
)

export const Wake = t.Object({
  id: t.String({ format: 'uuid' }),
  target: t.Object({ type: OneOf(TARGET_TYPES), id: t.String() }),
  schedule: t.Object({
    type: OneOf(['at', 'cron', 'every'] as const),
    at: Nullable(t.String({ format: 'date-time' })),
    cron: Nullable(t.String()),
    time_zone: Nullable(t.String()),
    every_minutes: Nullable(t.Integer()),
  }),
  command: t.Object({ name: t.String(), payload: t.Unknown() }),
  dedupe_key: Nullable(t.String()),
  enabled: t.Boolean({ description: 'a one-shot wake disables itself after a delivered run' }),
  next_run_at: Nullable(t.String({ format: 'date-time' })),
  last_run_at: Nullable(t.String({ format: 'date-time' })),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const WakeRun = t.Object({
  run_id: t.String({ format: 'uuid', description: 'the same in every attempt of this run (the X-Wake-Run-Id header and run_id of the body)' }),
  wake_id: t.String({ format: 'uuid' }),
  scheduled_for: t.String({ format: 'date-time' }),
  late: t.Boolean({ description: 'fired after its time, once for the slots missed while the service was down' }),
  manual: t.Boolean({ description: 'started by POST /v1/wake/{id}/run' }),
  status: OneOf(['pending', 'delivered', 'failed'] as const),
  attempts: t.Integer(),
  response_status: Nullable(t.Integer()),
  last_error: Nullable(t.String()),
  created_at: t.String({ format: 'date-time' }),
  finished_at: Nullable(t.String({ format: 'date-time' })),
})
