/** The GraphQL Query fields made from declared reads (src/graphql/operation-fields.ts): a field that takes some of the input only. */
import { describe, expect, test } from 'bun:test'
import { t } from 'elysia'
import { listOperation } from '../../src/http/operation'
import { operationFields } from '../../src/graphql/operation-fields'

describe('operation fields', () => {
  test('graphql.input: the field takes these of the input fields only, in this order', () => {
    const { sdl } = operationFields([
      listOperation({
        name: 'list_things',
        method: 'GET',
        path: '/v1/things',
        tag: 'Things',
        summary: 'List things',
        input: t.Object({ wait: t.Optional(t.Integer()), since: t.Optional(t.String()), thread_id: t.Optional(t.String({ format: 'uuid' })) }),
        graphql: { field: 'things', type: 'Thing', args: { since: 'DateTime' }, input: ['thread_id', 'since'] },
        list: { item: t.Object({ id: t.String() }), scope: () => 'things', fetch: async () => ({ rows: [], total: 0 }), present: row => row },
      }),
    ])
    expect(sdl).toContain('things(first: Int = 20, after: String, threadId: ID, since: DateTime): ThingConnection')
  })
})
