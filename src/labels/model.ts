/** Labels as the API shows them: a label of the organization, the rules of names, a relabel's answer. */
import { t } from 'elysia'
import { SYSTEM_LABELS } from '../mail/label-queries'

/** The most custom labels an organization keeps (system labels do not count). */
export const LABELS_MAX = 100

/** The most messages one batch relabels. */
export const BATCH_MAX = 100

export const LABEL_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,39}$'
export const LABEL_RULE = "1 to 40 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit"

export const LabelName = (description?: string) => t.String({ pattern: LABEL_PATTERN, error: `must be ${LABEL_RULE}`, ...(description && { description }) })

export const Label = t.Object({
  name: t.String(),
  system: t.Boolean({ description: `true for the labels the service sets (${SYSTEM_LABELS.join(', ')}); they cannot be created or deleted` }),
  created_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'null for a system label' }),
})

const Names = (what: string) =>
  t.Optional(
    t.Array(LabelName(), {
      maxItems: 20,
      description: `labels to ${what}: read or unread (each takes the other off), or custom ones the organization created; inbound and sent are set by the service`,
    }),
  )

/** What to add and what to take off; marking read takes unread off, and the reverse. */
export const LabelChanges = { add: Names('add'), remove: Names('take off') }

export const LabeledEmail = t.Object({
  id: t.String({ format: 'uuid' }),
  thread_id: t.String({ format: 'uuid' }),
  labels: t.Array(t.String(), { description: 'its labels now, sorted' }),
})

/** The label filter of GET /v1/emails and GET /v1/threads: repeated, every one must hold. */
export const LabelFilter = t.Optional(
  t.Array(LabelName(), {
    maxItems: 5,
    description: 'only what carries this label (unread, read, inbound, sent, or a custom one); repeat it (label=a&label=b) for all of them',
  }),
)
