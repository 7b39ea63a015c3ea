/** Email templates: CRUD, validate, the catalog of installable setups, and install. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf } from '../http/idempotency'
import { cursors, pageQuery } from '../http/pagination'
import { CATALOG, install, presentEntry } from './catalog'
import { CatalogEntry, Install, Installed, NewTemplate, Template, TemplatePatch, Validation, ValidateTemplate } from './model'
import { deleteTemplate, getTemplate, insertTemplate, listTemplates, presentTemplate, updateTemplate, validateTemplate } from './service'

const Id = t.Object({ id: t.String({ format: 'uuid' }) })

export function templateRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/templates', tags: ['Templates'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        set.status = 201
        return presentTemplate(await insertTemplate(ctx.sql, auth.orgId, body))
      },
      {
        body: NewTemplate,
        response: { 201: Ok(Template) },
        detail: {
          summary: 'Create an email template',
          description:
            'subject, body_text and body_html are Mustache (logic-less: {{name}}, {{#list}}...{{/list}}, {{^empty}}...{{/empty}}). They may use only the declared variables; ' +
            'body_html escapes every value and refuses unescaped output; partials are not supported. An alias already in use is 409 conflict.',
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        return cursors(ctx).read('templates', query, page => listTemplates(ctx.sql, auth.orgId, page), presentTemplate)
      },
      { query: t.Object(pageQuery()), response: { 200: Paged(Template) }, detail: { summary: 'List templates, newest first' } },
    )
    .post('/validate', ({ auth, body }) => validateTemplate(ctx.sql, auth.orgId, body), {
      body: ValidateTemplate,
      response: { 200: Ok(Validation) },
      detail: {
        summary: 'Check a template and render it with test data',
        description:
          "Give an unsaved template, or a stored one by id or alias, and data. The answer names missing and undeclared variables and the template's own errors; valid is true when it renders.",
      },
    })
    .get('/catalog', () => CATALOG.map(presentEntry), {
      response: { 200: Ok(t.Array(CatalogEntry)) },
      detail: {
        summary: 'Installable setups',
        description: 'Ready-made agent setups: their templates and settings. Install one with POST /v1/templates/install.',
      },
    })
    .post(
      '/install',
      async ({ auth, body, headers, set }) => {
        const key = idempotencyKeyOf(headers)
        return applyOutcome(set, key, await install(ctx, auth.orgId, body, key))
      },
      {
        body: Install,
        headers: t.Object({
          'idempotency-key': t.Optional(t.String({ description: 'a retry with the same key returns the original result without installing again' })),
        }),
        response: { 201: Ok(Installed) },
        detail: {
          summary: 'Install a catalog setup',
          description:
            'Creates every resource of the setup (templates, a function, an endpoint, a recipient route, memories) in one transaction and lists them. Each is created as its own operation would create it, with its rules; ' +
            "if one cannot be (an alias, function name or route pattern in use: 409 conflict; the plan's endpoint limit: 403 feature_disabled; a memory quota: 403 quota_exceeded; an unsafe URL or bad pattern: 400) nothing is. " +
            'A function runtime key (SERVICE_API_KEY) may not install (403 forbidden): a setup may deploy a function, with a credential of its own.',
        },
      },
    )
    .get('/:id', async ({ auth, params }) => presentTemplate(await getTemplate(ctx.sql, auth.orgId, params.id)), {
      params: Id,
      response: { 200: Ok(Template) },
      detail: { summary: 'Read a template' },
    })
    .patch('/:id', async ({ auth, params, body }) => presentTemplate(await updateTemplate(ctx.sql, auth.orgId, params.id, body)), {
      params: Id,
      body: TemplatePatch,
      response: { 200: Ok(Template) },
      detail: { summary: 'Change a template', description: 'Any field; the result is checked as on create. alias null removes the alias.' },
    })
    .delete('/:id', ({ auth, params }) => deleteTemplate(ctx.sql, auth.orgId, params.id), {
      params: Id,
      response: { 200: Ok(t.Object({ id: t.String({ format: 'uuid' }), deleted: t.Literal(true) })) },
      detail: { summary: 'Delete a template' },
    })
}
