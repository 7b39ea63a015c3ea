/**
 * Email templates: create, list, read, change, delete, validate, and the catalog of installable
 * setups, declared once for REST and GraphQL (src/http/operation.ts); none is an MCP tool.
 * Installing a setup stays in routes.ts: it replays on Idempotency-Key.
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Deleted, IdParam } from '../http/schema'
import { CATALOG, presentEntry } from './catalog'
import { CatalogEntry, NewTemplate, Template, TemplatePatch, Validation, ValidateTemplate } from './model'
import { deleteTemplate, getTemplate, insertTemplate, listTemplates, presentTemplate, updateTemplate, validateTemplate } from './service'

const TAG = 'Templates'

export const templateOperations = [
  operation({
    name: 'create_template',
    method: 'POST',
    path: '/v1/templates',
    tag: TAG,
    summary: 'Create an email template',
    description:
      'subject, body_text and body_html are Mustache (logic-less: {{name}}, {{#list}}...{{/list}}, {{^empty}}...{{/empty}}). They may use only the declared variables; ' +
      'body_html escapes every value and refuses unescaped output; partials are not supported. An alias already in use is 409 conflict.',
    input: NewTemplate,
    output: Template,
    status: 201,
    mcp: false,
    handle: async ({ ctx, auth }, body) => presentTemplate(await insertTemplate(ctx.sql, auth.orgId, body)),
  }),
  listOperation({
    name: 'list_templates',
    method: 'GET',
    path: '/v1/templates',
    tag: TAG,
    summary: 'List templates, newest first',
    mcp: false,
    graphql: { field: 'templates', type: 'Template', description: 'Stored email templates, newest first (as GET /v1/templates).' },
    list: {
      item: Template,
      scope: () => 'templates',
      fetch: ({ ctx, auth }, _args, page) => listTemplates(ctx.sql, auth.orgId, page),
      present: presentTemplate,
    },
  }),
  operation({
    name: 'validate_template',
    method: 'POST',
    path: '/v1/templates/validate',
    tag: TAG,
    summary: 'Check a template and render it with test data',
    description:
      "Give an unsaved template, or a stored one by id or alias, and data. The answer names missing and undeclared variables and the template's own errors; valid is true when it renders.",
    input: ValidateTemplate,
    output: Validation,
    mcp: false,
    handle: ({ ctx, auth }, body) => validateTemplate(ctx.sql, auth.orgId, body),
  }),
  operation({
    name: 'list_template_catalog',
    method: 'GET',
    path: '/v1/templates/catalog',
    tag: TAG,
    summary: 'Installable setups',
    description: 'Ready-made agent setups: their templates and settings. Install one with POST /v1/templates/install.',
    output: t.Array(CatalogEntry),
    mcp: false,
    handle: async () => CATALOG.map(presentEntry),
  }),
  operation({
    name: 'get_template',
    method: 'GET',
    path: '/v1/templates/:id',
    tag: TAG,
    summary: 'Read a template',
    params: IdParam,
    resource: 'template',
    output: Template,
    mcp: false,
    graphql: { field: 'template', type: 'Template' },
    handle: async ({ ctx, auth }, { id }) => presentTemplate(await getTemplate(ctx.sql, auth.orgId, id)),
  }),
  operation({
    name: 'update_template',
    method: 'PATCH',
    path: '/v1/templates/:id',
    tag: TAG,
    summary: 'Change a template',
    description: 'Any field; the result is checked as on create. alias null removes the alias.',
    params: IdParam,
    resource: 'template',
    input: TemplatePatch,
    output: Template,
    mcp: false,
    handle: async ({ ctx, auth }, { id, ...patch }) => presentTemplate(await updateTemplate(ctx.sql, auth.orgId, id, patch)),
  }),
  operation({
    name: 'delete_template',
    method: 'DELETE',
    path: '/v1/templates/:id',
    tag: TAG,
    summary: 'Delete a template',
    params: IdParam,
    resource: 'template',
    output: Deleted,
    mcp: false,
    handle: ({ ctx, auth }, { id }) => deleteTemplate(ctx.sql, auth.orgId, id),
  }),
]
