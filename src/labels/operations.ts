/**
 * Labels, declared once for REST, MCP and GraphQL (src/http/operation.ts): the organization's
 * labels (system and custom), and adding and taking labels off one message, a thread's messages,
 * or a batch. Lists filter by label through GET /v1/emails and GET /v1/threads (emails/operations.ts).
 */
import { t } from 'elysia'
import { operation } from '../http/operation'
import { BATCH_MAX, Label, LabelChanges, LabeledEmail, LabelName, LABELS_MAX } from './model'
import { createLabel, deleteLabel, listLabels, relabel } from './service'

const TAG = 'Labels'

const READ_STATE =
  'Marking read takes unread off and the reverse (taking read off marks unread). Each message whose labels changed is an email.labels_changed change.'

const Uuid = (description: string) => t.String({ format: 'uuid', description })

export const labelOperations = [
  operation({
    name: 'list_labels',
    method: 'GET',
    path: '/v1/labels',
    tag: TAG,
    summary: 'List labels: the system ones, then the organization’s by name',
    output: t.Array(Label),
    onePage: true,
    mcp: { items: 'the labels', description: 'The labels mail can carry: system ones (inbound, sent, unread, read) and the organization’s own.' },
    graphql: { field: 'labels', type: '[Label!]', description: 'The labels mail can carry (as GET /v1/labels).' },
    handle: ({ ctx, auth }) => listLabels(ctx.sql, auth.orgId),
  }),
  operation({
    name: 'create_label',
    method: 'POST',
    path: '/v1/labels',
    tag: TAG,
    summary: 'Create a custom label',
    description: `A name of ${LABELS_MAX} at most per organization (403 quota_exceeded past it); system names are reserved. A label that exists is answered as it is, with 200 instead of 201.`,
    input: t.Object({ name: LabelName('1 to 40 lowercase letters, digits, -, _ or ., starting with a letter or digit') }),
    output: Label,
    status: 201,
    mayFindExisting: true,
    mcp: { reportsCreated: true },
    async handle({ ctx, auth, status }, { name }) {
      const { label, created } = await createLabel(ctx, auth.orgId, name)
      if (!created) status?.(200)
      return label
    },
  }),
  operation({
    name: 'delete_label',
    method: 'DELETE',
    path: '/v1/labels/:name',
    tag: TAG,
    summary: 'Delete a custom label, taking it off every message',
    params: { name: LabelName('the custom label') },
    output: t.Object({ name: t.String(), deleted: t.Literal(true), messages: t.Integer({ description: 'how many messages it was taken off' }) }),
    handle: ({ ctx, auth }, { name }) => deleteLabel(ctx, auth.orgId, name),
  }),
  operation({
    name: 'label_email',
    method: 'POST',
    path: '/v1/emails/:id/labels',
    tag: TAG,
    summary: 'Add and remove labels on a message',
    description: READ_STATE,
    params: { id: Uuid('the message') },
    resource: 'email',
    input: t.Object(LabelChanges),
    output: LabeledEmail,
    mcp: { description: `Adds and removes labels on one message: add ["read"] marks it read. ${READ_STATE}`, hints: { idempotentHint: true } },
    handle: async ({ ctx, auth }, { id, add, remove }) => (await relabel(ctx, auth, { ids: [id.toLowerCase()] }, add, remove))[0]!,
  }),
  operation({
    name: 'label_emails',
    method: 'POST',
    path: '/v1/emails/labels',
    tag: TAG,
    summary: `Add and remove labels on up to ${BATCH_MAX} messages`,
    description: `All or nothing: an id that is not a message of the organization (or of a connection key's address) is 404 and changes nothing. ${READ_STATE}`,
    input: t.Object({
      ids: t.Array(Uuid('a message id'), { minItems: 1, maxItems: BATCH_MAX, description: `1 to ${BATCH_MAX} message ids` }),
      ...LabelChanges,
    }),
    output: t.Object({ emails: t.Array(LabeledEmail, { description: 'each message with its labels now, in id order' }) }),
    mcp: { hints: { idempotentHint: true } },
    handle: async ({ ctx, auth }, { ids, add, remove }) => ({
      emails: await relabel(ctx, auth, { ids: [...new Set(ids.map(id => id.toLowerCase()))] }, add, remove),
    }),
  }),
  operation({
    name: 'label_thread',
    method: 'POST',
    path: '/v1/threads/:id/labels',
    tag: TAG,
    summary: 'Add and remove labels on every message of a thread',
    description: `A thread's labels are the union of its messages'. ${READ_STATE}`,
    params: { id: Uuid('the thread') },
    resource: 'thread',
    input: t.Object(LabelChanges),
    output: t.Object({
      id: t.String({ format: 'uuid' }),
      labels: t.Array(t.String(), { description: "the union of its messages' labels now" }),
      emails: t.Array(LabeledEmail, { description: 'each message with its labels now, in id order' }),
    }),
    mcp: { hints: { idempotentHint: true } },
    handle: async ({ ctx, auth }, { id, add, remove }) => {
      const emails = await relabel(ctx, auth, { threadId: id.toLowerCase() }, add, remove)
      return { id, labels: [...new Set(emails.flatMap(e => e.labels))].sort(), emails }
    },
  }),
]
