/** Schemas of stored email templates, validation, the catalog and installs. */
import { t } from 'elysia'
import { Nullable } from '../http/schema'

const SINGLE_LINE = '^[^\\r\\n]*$'
export const ALIAS_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$'

export const VariableSchema = t.Object(
  {
    name: t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$', description: 'used as {{name}} in the template' }),
    required: t.Optional(t.Boolean({ description: 'default true; a variable with a default is never missing' })),
    default: t.Optional(t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean(), t.Null()])),
    description: t.Optional(t.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
)

const parts = {
  subject: t.String({ minLength: 1, maxLength: 998, pattern: SINGLE_LINE, description: 'a single line of Mustache' }),
  body_text: t.String({ maxLength: 1_000_000, description: 'Mustache; nothing is escaped in text' }),
  body_html: t.Optional(
    Nullable(t.String({ maxLength: 1_000_000, description: 'Mustache; every {{value}} is HTML-escaped, and unescaped output is refused' })),
  ),
  variables: t.Optional(t.Array(VariableSchema, { maxItems: 50, description: 'the only names the template may use and data may carry; default []' })),
}

export const NewTemplate = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    alias: t.Optional(Nullable(t.String({ pattern: ALIAS_PATTERN, description: 'unique in the organization; send-mail can name the template by it' }))),
    ...parts,
  },
  { additionalProperties: false },
)

export const TemplatePatch = t.Partial(NewTemplate, { additionalProperties: false, minProperties: 1 })

export const Template = t.Object({
  id: t.String({ format: 'uuid' }),
  name: t.String(),
  alias: Nullable(t.String()),
  subject: t.String(),
  body_text: t.String(),
  body_html: Nullable(t.String()),
  variables: t.Array(VariableSchema),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

const Data = t.Record(t.String(), t.Unknown(), { description: 'values of the declared variables' })

/** Names a stored template in send-mail and validate. */
export const TemplateRef = t.Object(
  {
    id: t.Optional(t.String({ format: 'uuid' })),
    alias: t.Optional(t.String({ pattern: ALIAS_PATTERN })),
    data: t.Optional(Data),
  },
  { additionalProperties: false, description: 'a stored template by id or alias (one of them) and its data; replaces subject, body_text and body_html' },
)

export const ValidateTemplate = t.Object(
  {
    template: t.Optional(
      t.Object(
        { name: t.Optional(t.String({ maxLength: 200 })), alias: t.Optional(Nullable(t.String({ pattern: ALIAS_PATTERN }))), ...parts },
        { additionalProperties: false, description: 'an unsaved template to check, as POST /v1/templates takes it (name and alias are not checked here)' },
      ),
    ),
    id: t.Optional(t.String({ format: 'uuid', description: 'or a stored one by id' })),
    alias: t.Optional(t.String({ pattern: ALIAS_PATTERN, description: 'or by alias' })),
    data: t.Optional(Data),
  },
  { additionalProperties: false },
)

export const Validation = t.Object({
  valid: t.Boolean({ description: 'the template is sound and renders with the data' }),
  errors: t.Array(t.String({ description: '`field: reason`' })),
  missing: t.Array(t.String(), { description: 'required variables the data lacks' }),
  undeclared: t.Array(t.String(), { description: 'names in the data that are not declared variables' }),
  rendered: Nullable(t.Object({ subject: t.String(), body_text: t.String(), body_html: Nullable(t.String()) })),
})

export const CatalogEntry = t.Object({
  slug: t.String(),
  name: t.String(),
  description: t.String(),
  variables: t.Array(VariableSchema, { description: 'what install asks for' }),
  creates: t.Array(t.Object({ type: t.String(), name: t.String() }), { description: 'the resources an install creates' }),
})

export const Install = t.Object(
  { slug: t.String({ maxLength: 100 }), variables: t.Optional(t.Record(t.String(), t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean()]))) },
  { additionalProperties: false },
)

export const Installed = t.Object({
  slug: t.String(),
  created: t.Array(
    t.Object({
      type: t.String({ description: 'template, function, endpoint, route or memory' }),
      id: t.String({ description: 'the resource id (a memory: its key)' }),
      name: t.String({ description: "alias, name, URL, pattern or key (a function's memory: functions/{id}/memories/{key})" }),
    }),
    { description: 'in creation order' },
  ),
})
