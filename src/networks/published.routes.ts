/** Publishing: which of the organization's addresses other organizations can discover. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok } from '../http/envelope'
import { OneOf } from '../http/schema'
import { PublishedAgent, skill, SKILL_MAX } from './model'
import { listPublished, presentPublished, publishAddress, unpublishAddress } from './publishing'

const AddressParams = t.Object({ address: t.String({ minLength: 3, maxLength: 320, description: 'an address of the organization' }) })

export function publishedAgentRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/published-agents', tags: ['Agent Networks'] })
    .use(authenticated(ctx))
    .get('/', async ({ auth }) => (await listPublished(ctx.sql, auth.orgId)).map(r => presentPublished(ctx.config, r)), {
      response: { 200: Ok(t.Array(PublishedAgent)) },
      detail: { summary: 'List the published addresses of the organization' },
    })
    .put(
      '/:address',
      async ({ auth, params, body, set }) => {
        const { row, created } = await publishAddress(ctx.sql, auth, params.address, body)
        set.status = created ? 201 : 200
        return presentPublished(ctx.config, row)
      },
      {
        params: AddressParams,
        body: t.Object(
          {
            display_name: t.String({ minLength: 1, maxLength: 100 }),
            description: t.Optional(t.String({ maxLength: 2000 })),
            skills: t.Optional(t.Array(skill, { maxItems: SKILL_MAX, description: `up to ${SKILL_MAX}; stored lowercase` })),
            accepts_contacts: t.Optional(t.Boolean({ description: 'default true' })),
            visibility: t.Optional(OneOf(['networks', 'public'] as const, { description: 'default networks' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: Ok(PublishedAgent), 201: Ok(PublishedAgent) },
        detail: {
          summary: 'Publish an address, or change how it is published',
          description:
            'Needs the owner or admin role. The address (a managed inbox or an address at a verified domain) appears in the directory of every network the organization is an active member of; with visibility public also in the built-in registry and as a public A2A agent card. Omitted fields take their defaults (this is a replacement).',
        },
      },
    )
    .delete('/:address', ({ auth, params }) => unpublishAddress(ctx.sql, auth, params.address), {
      params: AddressParams,
      response: { 200: Ok(t.Object({ address: t.String(), unpublished: t.Literal(true) })) },
      detail: {
        summary: 'Stop publishing an address',
        description: 'Needs the owner or admin role. Contacts admitted from it keep their data and lose their send grant.',
      },
    })
}
