/**
 * Email templates: create, list, read, change, delete, validate, and the catalog of installable
 * setups, declared once for REST and GraphQL (src/http/operation.ts); none is an MCP tool.
 * Installing a setup stays in routes.ts: it replays on Idempotency-Key.
 */
import { t } from 'elysia'
import { operation } from '../http/operation'
import { resourceOperations } from '../http/resource-operations'
import { CATALOG, presentEntry } from './catalog'
import { CatalogEntry, NewTemplate, Template, TemplatePatch, Validation, ValidateTemplate } from './model'
import { deleteTemplate, getTemplate, insertTemplate, listTemplates, presentTemplate, updateTemplate, validateTemplate } from './service'

const TAG = 'Templates'

const template = resourceOperations('/v1/templates', {
  tag: TAG,
  resource: 'template',
  output: Template,
  present: presentTemplate,
  type: 'Template',
  mcp: false,
})

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
  template.list({
    name: 'list_templates',
    summary: 'List templates, newest first',
    graphql: { field: 'templates', description: 'Stored email templates, newest first (as GET /v1/templates).' },
    scope: () => 'templates',
    fetch: listTemplates,
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
  template.get({ name: 'get_template', summary: 'Read a template', graphql: 'template', find: getTemplate }),
  template.update({
    name: 'update_template',
    summary: 'Change a template',
    description: 'Any field; the result is checked as on create. alias null removes the alias.',
    input: TemplatePatch,
    change: updateTemplate,
  }),
  template.delete({ name: 'delete_template', summary: 'Delete a template', remove: deleteTemplate }),
]
