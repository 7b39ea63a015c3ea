/** Email templates: CRUD, escaping, declared variables, validate, send-mail with a template, catalog installs. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'

let t: TestApp
let org: TestOrg

const welcome = {
  name: 'Welcome',
  alias: 'welcome',
  subject: 'Welcome, {{name}}',
  body_text: 'Hi {{name}},\n{{#items}}- {{title}}\n{{/items}}{{^items}}nothing yet\n{{/items}}',
  body_html: '<p>Hi {{name}}</p><ul>{{#items}}<li>{{title}}</li>{{/items}}</ul>',
  variables: [{ name: 'name' }, { name: 'items', required: false }],
}

beforeAll(async () => {
  t = await testApp()
  org = await createOrg()
})

describe('CRUD', () => {
  test('create, read, list, patch, delete', async () => {
    const o = await createOrg()
    const created = expectOk(await t.request('POST', '/v1/templates', { key: o.key, body: welcome }), 201)
    expect(created).toMatchObject({ name: 'Welcome', alias: 'welcome', body_html: welcome.body_html, variables: welcome.variables })
    expect(expectOk(await t.request('GET', `/v1/templates/${created.id}`, { key: o.key }))).toEqual(created)
    const list = await t.request('GET', '/v1/templates', { key: o.key })
    expect(expectOk(list).map((x: { id: string }) => x.id)).toEqual([created.id])
    expect(list.body.meta).toMatchObject({ total: 1, cursor: null })
    const patched = expectOk(await t.request('PATCH', `/v1/templates/${created.id}`, { key: o.key, body: { subject: 'Hello {{name}}', alias: null } }))
    expect(patched).toMatchObject({ subject: 'Hello {{name}}', alias: null })
    expect(expectOk(await t.request('DELETE', `/v1/templates/${created.id}`, { key: o.key }))).toEqual({ id: created.id, deleted: true })
    expectError(await t.request('GET', `/v1/templates/${created.id}`, { key: o.key }), 404, 'not_found')
  })

  test('an alias in use is 409; bad templates are validation errors naming the field', async () => {
    const o = await createOrg()
    expectOk(await t.request('POST', '/v1/templates', { key: o.key, body: welcome }), 201)
    expectError(await t.request('POST', '/v1/templates', { key: o.key, body: welcome }), 409, 'conflict', /^alias: /)
    const bad = async (patch: Record<string, unknown>, pattern: RegExp) =>
      expectError(await t.request('POST', '/v1/templates', { key: o.key, body: { ...welcome, alias: undefined, ...patch } }), 400, 'validation_error', pattern)
    await bad({ body_text: 'Hi {{nickname}}' }, /^body_text: uses "nickname", which is not a declared variable/)
    await bad({ body_html: '<p>{{{name}}}</p>' }, /^body_html: unescaped output/)
    await bad({ body_html: '<p>{{&name}}</p>' }, /^body_html: unescaped output/)
    await bad({ body_text: '{{> footer}}' }, /^body_text: partials/)
    await bad({ body_text: '{{#items}} unclosed' }, /^body_text: is not a valid template/)
    await bad({ subject: 'two\nlines' }, /subject/)
    await bad({ variables: [{ name: 'name' }, { name: 'name' }] }, /^variables\[1\]\.name: /)
    await bad({ variables: [{ name: 'bad-name' }] }, /variables/)
    expectError(await t.request('PATCH', `/v1/templates/${crypto.randomUUID()}`, { key: o.key, body: { name: 'x' } }), 404, 'not_found')
  })
})

describe('validate', () => {
  test('renders with test data, escaping HTML and not text', async () => {
    const v = expectOk(
      await t.request('POST', '/v1/templates/validate', {
        key: org.key,
        body: { template: welcome, data: { name: '<Ann> & "Bo"', items: [{ title: 'a<b' }] } },
      }),
    )
    expect(v).toMatchObject({ valid: true, errors: [], missing: [], undeclared: [] })
    expect(v.rendered.subject).toBe('Welcome, <Ann> & "Bo"')
    expect(v.rendered.body_text).toBe('Hi <Ann> & "Bo",\n- a<b\n')
    expect(v.rendered.body_html).toBe('<p>Hi &lt;Ann&gt; &amp; &quot;Bo&quot;</p><ul><li>a&lt;b</li></ul>')
  })

  test('names missing and undeclared variables', async () => {
    const v = expectOk(await t.request('POST', '/v1/templates/validate', { key: org.key, body: { template: welcome, data: { nam: 'typo' } } }))
    expect(v).toMatchObject({ valid: false, missing: ['name'], undeclared: ['nam'], rendered: null })
    expect(v.errors[0]).toMatch(/^data: "nam" is not a declared variable/)
    const broken = expectOk(
      await t.request('POST', '/v1/templates/validate', { key: org.key, body: { template: { ...welcome, body_text: '{{x}}' }, data: {} } }),
    )
    expect(broken).toMatchObject({ valid: false, errors: ['template.body_text: uses "x", which is not a declared variable (add it to variables)'] })
  })

  test('a stored template by alias; another organization cannot name it', async () => {
    const o = await createOrg()
    expectOk(await t.request('POST', '/v1/templates', { key: o.key, body: welcome }), 201)
    expect(expectOk(await t.request('POST', '/v1/templates/validate', { key: o.key, body: { alias: 'welcome', data: { name: 'Z' } } })).rendered.subject).toBe(
      'Welcome, Z',
    )
    expectError(await t.request('POST', '/v1/templates/validate', { key: org.key, body: { alias: 'welcome', data: { name: 'Z' } } }), 404, 'not_found')
    expectError(await t.request('POST', '/v1/templates/validate', { key: o.key, body: { alias: 'welcome', template: welcome } }), 400, 'validation_error')
  })
})

describe('send-mail with a template', () => {
  test('renders subject and bodies; escapes the HTML part', async () => {
    const o = await createOrg()
    const from = await managedAddress(t.ctx, o.orgId)
    const tpl = expectOk(await t.request('POST', '/v1/templates', { key: o.key, body: welcome }), 201)
    const sent = expectOk(
      await t.request('POST', '/v1/send-mail', {
        key: o.key,
        body: { from, to: 'ann@example.com', template: { id: tpl.id, data: { name: '<script>x</script>' } } },
      }),
    )
    const sql = await testSql()
    const [email] = await sql<{ subject: string; text_body: string; html_body: string }[]>`
      select e.subject, e.text_body, e.html_body from emails e join sends s on s.last_email_id = e.id where s.id = ${sent.id}`
    expect(email!.subject).toBe('Welcome, <script>x</script>')
    expect(email!.text_body).toContain('Hi <script>x</script>,')
    expect(email!.html_body).toContain('<p>Hi &lt;script&gt;x&lt;&#x2F;script&gt;</p>')
    expect(email!.html_body).not.toContain('<script>')
  })

  test('missing or undeclared variables and conflicting fields are refused; nothing is sent', async () => {
    const o = await createOrg()
    const from = await managedAddress(t.ctx, o.orgId)
    expectOk(await t.request('POST', '/v1/templates', { key: o.key, body: welcome }), 201)
    const send = (body: Record<string, unknown>) => t.request('POST', '/v1/send-mail', { key: o.key, body: { from, to: 'ann@example.com', ...body } })
    expectError(await send({ template: { alias: 'welcome', data: {} } }), 400, 'validation_error', /^template\.data: missing "name"/)
    expectError(
      await send({ template: { alias: 'welcome', data: { name: 'a', extra: 1 } } }),
      400,
      'validation_error',
      /^template\.data: "extra" is not a declared variable/,
    )
    expectError(
      await send({ template: { alias: 'welcome', data: { name: 'a' } }, subject: 'x' }),
      400,
      'validation_error',
      /^subject: must not be given with template/,
    )
    expectError(await send({ template: { data: { name: 'a' } } }), 400, 'validation_error', /^template: needs exactly one of id and alias/)
    expectError(await send({ template: { alias: 'nope' } }), 404, 'not_found')
    expectError(await send({ body_text: 'no subject' }), 400, 'validation_error', /^subject: is required/)
    expectError(await send({ template: { alias: 'welcome', data: { name: 'line\nbreak' } } }), 400, 'validation_error', /line break/)
    const sql = await testSql()
    const [row] = await sql`select count(*)::int as n from sends where org_id = ${o.orgId}`
    expect(row!.n).toBe(0)
  })
})

describe('catalog and install', () => {
  test('the catalog lists setups; install creates everything it lists, once per Idempotency-Key', async () => {
    const o = await createOrg()
    const catalog = expectOk(await t.request('GET', '/v1/templates/catalog', { key: o.key }))
    expect(catalog.map((e: { slug: string }) => e.slug)).toEqual(expect.arrayContaining(['auto-responder', 'payment-request']))
    const body = { slug: 'payment-request', variables: { from_address: 'billing@example.com' } }
    const first = await t.request('POST', '/v1/templates/install', { key: o.key, body, headers: { 'idempotency-key': 'install-1' } })
    const installed = expectOk(first, 201)
    expect(installed.created.map((c: { type: string; name: string }) => `${c.type}:${c.name}`)).toEqual([
      'template:payment-request',
      'template:payment-receipt',
      'memory:payments/config',
    ])
    const again = await t.request('POST', '/v1/templates/install', { key: o.key, body, headers: { 'idempotency-key': 'install-1' } })
    expect(expectOk(again, 201)).toEqual(installed)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(expectOk(await t.request('GET', '/v1/memories/payments%2Fconfig', { key: o.key })).value).toEqual({
      request_template: 'payment-request',
      receipt_template: 'payment-receipt',
      from: 'billing@example.com',
      network: 'base-sepolia',
    })
    const tpl = expectOk(
      await t.request('POST', '/v1/templates/validate', { key: o.key, body: { alias: 'payment-request', data: { amount: '1.50', description: 'a report' } } }),
    )
    expect(tpl.rendered.subject).toBe('Payment request: a report')
  })

  test('install creates everything or nothing: a taken alias leaves no template and no memory', async () => {
    const o = await createOrg()
    // the second template of the setup collides
    expectOk(await t.request('POST', '/v1/templates', { key: o.key, body: { ...welcome, alias: 'payment-receipt' } }), 201)
    const res = await t.request('POST', '/v1/templates/install', {
      key: o.key,
      body: { slug: 'payment-request', variables: { from_address: 'b@example.com' } },
    })
    expectError(res, 409, 'conflict', /payment-receipt/)
    const sql = await testSql()
    const [templates] = await sql`select count(*)::int as n from email_templates where org_id = ${o.orgId}`
    expect(templates!.n).toBe(1)
    expectError(await t.request('GET', '/v1/memories/payments%2Fconfig', { key: o.key }), 404, 'not_found')
  })

  test('unknown setups and variables are validation errors', async () => {
    expectError(await t.request('POST', '/v1/templates/install', { key: org.key, body: { slug: 'nope' } }), 400, 'validation_error', /^slug: /)
    expectError(
      await t.request('POST', '/v1/templates/install', { key: org.key, body: { slug: 'auto-responder' } }),
      400,
      'validation_error',
      /^variables: missing "from_address"/,
    )
    expectError(
      await t.request('POST', '/v1/templates/install', { key: org.key, body: { slug: 'auto-responder', variables: { from_address: 'a@b.c', x: 1 } } }),
      400,
      'validation_error',
      /^variables: "x"/,
    )
  })
})

describe('boundaries', () => {
  test("another organization's template is 404 everywhere", async () => {
    const a = await createOrg()
    const b = await createOrg()
    const tpl = expectOk(await t.request('POST', '/v1/templates', { key: a.key, body: welcome }), 201)
    expectError(await t.request('GET', `/v1/templates/${tpl.id}`, { key: b.key }), 404, 'not_found')
    expectError(await t.request('PATCH', `/v1/templates/${tpl.id}`, { key: b.key, body: { name: 'mine' } }), 404, 'not_found')
    expectError(await t.request('DELETE', `/v1/templates/${tpl.id}`, { key: b.key }), 404, 'not_found')
    expect(expectOk(await t.request('GET', '/v1/templates', { key: b.key }))).toEqual([])
    const from = await managedAddress(t.ctx, b.orgId)
    expectError(
      await t.request('POST', '/v1/send-mail', { key: b.key, body: { from, to: 'x@example.com', template: { id: tpl.id, data: { name: 'x' } } } }),
      404,
      'not_found',
    )
  })

  test('a connection key may not use templates (403), nor send with one it cannot read', async () => {
    const bound = await managedAddress(t.ctx, org.orgId)
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address: bound } }), 201)
    const conn = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    for (const [method, path, body] of [
      ['GET', '/v1/templates'],
      ['POST', '/v1/templates', welcome],
      ['GET', `/v1/templates/${crypto.randomUUID()}`],
      ['PATCH', `/v1/templates/${crypto.randomUUID()}`, { name: 'x' }],
      ['DELETE', `/v1/templates/${crypto.randomUUID()}`],
      ['POST', '/v1/templates/validate', { template: welcome }],
      ['GET', '/v1/templates/catalog'],
      ['POST', '/v1/templates/install', { slug: 'auto-responder' }],
    ] as [string, string, unknown?][]) {
      expectError(await t.request(method, path, { key: conn, body }), 403, 'forbidden')
    }
  })
})
