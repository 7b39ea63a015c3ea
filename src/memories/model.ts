/** Schemas and limits of memories: durable JSON values under keys, org or function scope. */
import { t } from 'elysia'
import { MEMORY_VALUE_MAX_BYTES } from '../account/plans'
import { Nullable } from '../http/schema'

export const MEMORY_KEY_MAX_BYTES = 512
export const MEMORY_METADATA_MAX_BYTES = 4 * 1024
/** a year: longer-lived data simply has no ttl */
export const MEMORY_TTL_MAX_SECONDS = 365 * 24 * 3600
export const MEMORY_BATCH_MAX = 25

const ttl = t.Integer({
  minimum: 1,
  maximum: MEMORY_TTL_MAX_SECONDS,
  description: `seconds until the key expires (1 to ${MEMORY_TTL_MAX_SECONDS}); omitted = never`,
})
const metadata = t.Record(t.String(), t.Unknown(), { description: `a JSON object of your own, up to ${MEMORY_METADATA_MAX_BYTES / 1024} KB; default {}` })
const value = t.Unknown({ description: `any JSON value, up to ${MEMORY_VALUE_MAX_BYTES / 1024} KB serialized` })
const key = t.String({
  minLength: 1,
  maxLength: MEMORY_KEY_MAX_BYTES,
  description: `1 to ${MEMORY_KEY_MAX_BYTES} bytes of UTF-8 without control characters; \`/\` separates prefixes`,
})
const version = t.Integer({ minimum: 1, description: 'the version the key must have now' })

export const PutMemory = t.Object({ value, ttl_seconds: t.Optional(ttl), metadata: t.Optional(metadata) }, { additionalProperties: false })

export const Memory = t.Object({
  key: t.String(),
  value: t.Unknown(),
  version: t.Integer({ description: 'increases with every write; also the ETag. Versions are never reused, even after a delete' }),
  metadata: t.Record(t.String(), t.Unknown()),
  expires_at: Nullable(t.String({ format: 'date-time' })),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const MemoryListItem = t.Composite([
  t.Omit(Memory, ['value']),
  t.Object({ value: t.Optional(t.Unknown({ description: 'present with include_values=true' })) }),
])

export const DeletedMemory = t.Object({ key: t.String(), deleted: t.Literal(true), version: t.Integer({ description: 'the version that was deleted' }) })

export const BatchOperation = t.Union([
  t.Object(
    {
      op: t.Literal('check'),
      key,
      version: t.Optional(version),
      exists: t.Optional(t.Boolean({ description: 'false: the key must not exist; true: it must' })),
    },
    { additionalProperties: false, description: 'fails the batch unless the key is as described' },
  ),
  t.Object(
    { op: t.Literal('set'), key, value, ttl_seconds: t.Optional(ttl), metadata: t.Optional(metadata), if_version: t.Optional(version) },
    { additionalProperties: false },
  ),
  t.Object({ op: t.Literal('delete'), key, if_version: t.Optional(version) }, { additionalProperties: false }),
])

export const Batch = t.Object({ operations: t.Array(BatchOperation, { minItems: 1, maxItems: MEMORY_BATCH_MAX }) }, { additionalProperties: false })

export const BatchResult = t.Object({
  results: t.Array(
    t.Object({
      op: t.Union([t.Literal('check'), t.Literal('set'), t.Literal('delete')]),
      key: t.String(),
      version: Nullable(t.Integer(), { description: 'after a set: the new version; a check: the current one; a delete: the deleted one' }),
    }),
  ),
})

export type BatchOp = (typeof BatchOperation)['static']
