/**
 * Email templates are Mustache (the `mustache` package, mustache.js): logic-less, so a stored
 * template can substitute values, test them and loop over lists, and nothing else: no code, no
 * helpers, no file access. Its HTML escaping is on by default and its parser is reachable
 * (`Mustache.parse`), which is how variables are checked against the declared ones. It is the
 * reference JavaScript implementation of the Mustache spec, small, without dependencies, and
 * has been stable for a decade; Handlebars would add helpers (logic) we would have to forbid.
 *
 * The rules on top: a template may use only declared variables (checked when it is saved);
 * body_html may not print unescaped (`{{{x}}}`, `{{&x}}`); partials and delimiter changes are
 * refused; data may carry only declared variables, and every required one.
 */
import Mustache from 'mustache'
import { errors } from '../errors'

// mustache.js caches every template it parses, without bound: stored templates are many.
Mustache.templateCache = undefined

export interface Variable {
  name: string
  required?: boolean
  default?: string | number | boolean | null
  description?: string
}

export interface TemplateSource {
  subject: string
  body_text: string
  body_html?: string | null
  variables: Variable[]
}

export interface Rendered {
  subject: string
  body_text: string
  body_html: string | null
}

type Token = [string, string, number, number, Token[]?]

/** The variables a part refers to from its top level (dotted names by their root), or a `field: reason`. */
function references(field: string, source: string, html: boolean): Set<string> {
  let tokens: Token[]
  try {
    tokens = Mustache.parse(source) as unknown as Token[]
  } catch (e) {
    throw errors.validation(field, `is not a valid template: ${(e as Error).message}`)
  }
  const refs = new Set<string>()
  const walk = (list: Token[], depth: number) => {
    for (const [type, name, , , children] of list) {
      if (type === 'text' || type === '!') continue
      if (type === '>') throw errors.validation(field, `partials ({{> ${name}}}) are not supported`)
      if (type === '=') throw errors.validation(field, 'changing the delimiters is not supported')
      if (type === '&' && html) throw errors.validation(field, `unescaped output of "${name}" ({{{...}}} or {{&...}}) is not allowed in HTML`)
      // Inside a section names are first looked up on the section's item; only the top level is
      // certainly about the data itself.
      if (depth === 0 && name !== '.') refs.add(name.split('.')[0]!)
      if ((type === '#' || type === '^') && children) walk(children, depth + 1)
    }
  }
  walk(tokens, 0)
  return refs
}

/** Checks a template: valid Mustache, only declared variables, no unescaped HTML. Throws validation_error. */
export function checkTemplate(t: TemplateSource, prefix = ''): void {
  const declared = new Set<string>()
  for (const [i, v] of t.variables.entries()) {
    if (declared.has(v.name)) throw errors.validation(`${prefix}variables[${i}].name`, `"${v.name}" is declared twice`)
    declared.add(v.name)
  }
  const parts: [string, string | null | undefined, boolean][] = [
    ['subject', t.subject, false],
    ['body_text', t.body_text, false],
    ['body_html', t.body_html, true],
  ]
  for (const [field, source, html] of parts) {
    if (source == null) continue
    for (const name of references(prefix + field, source, html)) {
      if (!declared.has(name)) throw errors.validation(prefix + field, `uses "${name}", which is not a declared variable (add it to variables)`)
    }
  }
}

/** What rendering with `data` lacks or has too much of. */
export function dataProblems(t: TemplateSource, data: Record<string, unknown>): { missing: string[]; undeclared: string[] } {
  const declared = new Map(t.variables.map(v => [v.name, v]))
  return {
    missing: t.variables.filter(v => v.required !== false && v.default === undefined && !(v.name in data)).map(v => v.name),
    undeclared: Object.keys(data).filter(k => !declared.has(k)),
  }
}

/** Renders a checked template; throws validation_error naming missing or undeclared variables. */
export function render(t: TemplateSource, data: Record<string, unknown>, field = 'template.data'): Rendered {
  const { missing, undeclared } = dataProblems(t, data)
  if (undeclared.length)
    throw errors.validation(
      field,
      `${undeclared.map(n => `"${n}"`).join(', ')} ${undeclared.length > 1 ? 'are not declared variables' : 'is not a declared variable'} of the template`,
    )
  if (missing.length) throw errors.validation(field, `missing ${missing.map(n => `"${n}"`).join(', ')}`)
  const view: Record<string, unknown> = Object.create(null)
  for (const v of t.variables) view[v.name] = v.name in data ? data[v.name] : (v.default ?? '')
  // text parts are not HTML: nothing is escaped there
  const plain = { escape: (s: string) => s }
  const subject = Mustache.render(t.subject, view, {}, plain)
  if (/[\r\n]/.test(subject)) throw errors.validation(field, 'renders a subject with a line break')
  return {
    subject,
    body_text: Mustache.render(t.body_text, view, {}, plain),
    body_html: t.body_html == null ? null : Mustache.render(t.body_html, view, {}),
  }
}
