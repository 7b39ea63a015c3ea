import { beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'

const OK_CODE = `export default { async fetch(request, env) { return new Response('ok') } }`
const MiB = 1024 * 1024

let h: TestApp
let org: TestOrg
beforeAll(async () => {
  h = await testApp()
  org = await createOrg()
})

let n = 0
const uniqueName = () => `fn-${++n}-${Math.random().toString(36).slice(2, 8)}`

async function deploy(code = OK_CODE, name = uniqueName(), as = org) {
  return h.request('POST', '/v1/functions', { key: as.key, body: { name, code } })
}

describe('deploy', () => {
  test('a module with a default fetch is deployed and current; reads, list and deployments agree', async () => {
    const res = await deploy()
    expect(res.status).toBe(201)
    const fn = res.body.data
    expect(fn).toMatchObject({ deploy_status: 'deployed', current_deployment_id: fn.deployment.id, tags: [], endpoint_id: null, route: null })
    expect(fn.deployment).toMatchObject({ status: 'deployed', deploy_error: null, is_current: true, bundle_bytes: OK_CODE.length })
    const one = await h.request('GET', `/v1/functions/${fn.id}`, { key: org.key })
    expect(one.body.data).toMatchObject({ id: fn.id, name: fn.name, deploy_status: 'deployed' })
    const list = await h.request('GET', '/v1/functions?limit=100', { key: org.key })
    expect(list.body.data.map((f: any) => f.id)).toContain(fn.id)
    expect(list.body.meta).toMatchObject({ limit: 100 })
  })

  test('a syntax error gives a failed deployment with line and column, and the previous one stays current', async () => {
    const fn = (await deploy()).body.data
    const res = await h.request('PUT', `/v1/functions/${fn.id}`, {
      key: org.key,
      body: { code: 'export default {\n  async fetch() {\n    return new Response(\n  }\n}' },
    })
    expect(res.status).toBe(200)
    expect(res.body.data.deployment).toMatchObject({ status: 'failed', is_current: false, deploy_error: { name: 'SyntaxError', line: 4 } })
    expect(res.body.data.deployment.deploy_error.column).toBeGreaterThan(0)
    expect(res.body.data.current_deployment_id).toBe(fn.current_deployment_id)
    const deployments = await h.request('GET', `/v1/functions/${fn.id}/deployments`, { key: org.key })
    expect(deployments.body.data.map((d: any) => [d.status, d.is_current])).toEqual([
      ['failed', false],
      ['deployed', true],
    ])
    const good = await h.request('PUT', `/v1/functions/${fn.id}`, { key: org.key, body: { name: fn.name, code: OK_CODE.replace('ok', 'v2') } })
    expect(good.body.data.deployment).toMatchObject({ status: 'deployed', is_current: true })
    expect(good.body.data.current_deployment_id).toBe(good.body.data.deployment.id)
  })

  test('no default export, no fetch, or a top-level throw fail the deploy with a useful error', async () => {
    const cases: [string, RegExp][] = [
      ['export const x = 1', /no default export/],
      ['export default { handle() {} }', /no fetch/],
      ['throw new Error("boom at load")\nexport default { fetch() {} }', /boom at load/],
    ]
    for (const [code, message] of cases) {
      const res = await deploy(code)
      expect(res.status).toBe(201)
      expect(res.body.data).toMatchObject({ deploy_status: 'failed', current_deployment_id: null })
      expect(res.body.data.deployment.deploy_error.message).toMatch(message)
    }
  })

  test('names are unique per organization and immutable', async () => {
    const name = uniqueName()
    const fn = (await deploy(OK_CODE, name)).body.data
    expectError(await deploy(OK_CODE, name), 409, 'conflict', /name/)
    expectError(await h.request('PUT', `/v1/functions/${fn.id}`, { key: org.key, body: { name: 'other', code: OK_CODE } }), 400, 'validation_error', /^name: /)
    expectError(await deploy(OK_CODE, 'Bad Name'), 400, 'validation_error', /^name: /)
    const other = await createOrg()
    expect((await deploy(OK_CODE, name, other)).status).toBe(201)
  })

  test('size limits name the field, raw size first, then gzip size; a body past the route limit is 413', async () => {
    // 64 MiB + 1 of one letter: small gzipped, refused for its raw size
    expectError(await deploy('a'.repeat(64 * MiB + 1)), 400, 'validation_error', /^code: .*64 MiB raw/)
    // random base64 compresses to about three quarters: 14 MiB raw is over 10 MiB gzipped
    const noisy = `export default { fetch() { return new Response('${randomBytes(10.5 * MiB).toString('base64')}') } }`
    expectError(await deploy(noisy), 400, 'validation_error', /^code: .*10 MiB gzipped/)
    const map = randomBytes(15.5 * MiB).toString('base64')
    expectError(
      await h.request('POST', '/v1/functions', { key: org.key, body: { name: uniqueName(), code: OK_CODE, sourceMap: map } }),
      400,
      'validation_error',
      /^sourceMap: .*15 MiB gzipped/,
    )
    // other routes keep the global limit
    expectError(await h.request('POST', '/v1/endpoints', { key: org.key, body: { url: 'x'.repeat(17 * MiB) } }), 413, 'payload_too_large')
    const huge = await h.request('POST', '/v1/functions', { key: org.key, body: { name: uniqueName(), code: 'a'.repeat(133 * MiB) } })
    expectError(huge, 413, 'payload_too_large')
  }, 60_000)
})

describe('manage', () => {
  test('tags replace; deleting makes reads 404 and frees the name', async () => {
    const fn = (await deploy()).body.data
    const tagged = await h.request('PATCH', `/v1/functions/${fn.id}/tags`, { key: org.key, body: { tags: ['billing', 'beta', 'beta'] } })
    expect(tagged.body.data.tags).toEqual(['billing', 'beta'])
    const del = await h.request('DELETE', `/v1/functions/${fn.id}`, { key: org.key })
    expect(del.body.data).toEqual({ id: fn.id, deleted: true })
    expectError(await h.request('GET', `/v1/functions/${fn.id}`, { key: org.key }), 404, 'not_found')
    expectError(await h.request('GET', `/v1/functions/${fn.id}/deployments`, { key: org.key }), 404, 'not_found')
    expectError(await h.request('DELETE', `/v1/functions/${fn.id}`, { key: org.key }), 404, 'not_found')
    expect((await deploy(OK_CODE, fn.name)).status).toBe(201)
  })

  test("another organization's function is 404 on every route", async () => {
    const fn = (await deploy()).body.data
    const other = await createOrg()
    for (const [method, path, body] of [
      ['GET', `/v1/functions/${fn.id}`],
      ['PUT', `/v1/functions/${fn.id}`, { code: OK_CODE }],
      ['DELETE', `/v1/functions/${fn.id}`],
      ['PATCH', `/v1/functions/${fn.id}/tags`, { tags: [] }],
      ['GET', `/v1/functions/${fn.id}/deployments`],
      ['PUT', `/v1/functions/${fn.id}/route`, { domain_id: null }],
      ['GET', `/v1/functions/${fn.id}/secrets`],
      ['POST', `/v1/functions/${fn.id}/secrets`, { key: 'A', value: 'b' }],
    ] as [string, string, unknown?][]) {
      expectError(await h.request(method, path, { key: other.key, body }), 404, 'not_found')
    }
    expect((await h.request('GET', `/v1/functions/${fn.id}`, { key: org.key })).status).toBe(200)
  })
})

describe('secrets', () => {
  test('set, list (keys only), replace, delete; reserved and malformed keys name the key', async () => {
    const fn = (await deploy()).body.data
    const created = await h.request('POST', `/v1/functions/${fn.id}/secrets`, { key: org.key, body: { key: 'API_TOKEN', value: 's3cret' } })
    expect(created.status).toBe(201)
    expect(JSON.stringify(created.body)).not.toContain('s3cret')
    expect((await h.request('PUT', `/v1/functions/${fn.id}/secrets/API_TOKEN`, { key: org.key, body: { value: 'new' } })).status).toBe(200)
    const list = await h.request('GET', `/v1/functions/${fn.id}/secrets`, { key: org.key })
    expect(list.body.data.map((s: any) => Object.keys(s).sort())).toEqual([['created_at', 'key', 'updated_at']])
    for (const key of ['SERVICE_API_KEY', 'SERVICE_WEBHOOK_SECRET', 'SERVICE_API_BASE_URL']) {
      expectError(
        await h.request('POST', `/v1/functions/${fn.id}/secrets`, { key: org.key, body: { key, value: 'x' } }),
        400,
        'validation_error',
        new RegExp(`^key ${key}: is reserved`),
      )
      expectError(
        await h.request('PUT', `/v1/org/secrets/${key}`, { key: org.key, body: { value: 'x' } }),
        400,
        'validation_error',
        new RegExp(`^key ${key}: is reserved`),
      )
    }
    for (const key of ['lower', '1ABC', 'A-B', '']) {
      expectError(await h.request('POST', '/v1/org/secrets', { key: org.key, body: { key, value: 'x' } }), 400, 'validation_error', /^key .*: must match/)
    }
    expectError(
      await h.request('POST', '/v1/org/secrets', { key: org.key, body: { key: 'BIG', value: 'x'.repeat(4097) } }),
      400,
      'validation_error',
      /^value: /,
    )
    expect((await h.request('DELETE', `/v1/functions/${fn.id}/secrets/API_TOKEN`, { key: org.key })).body.data).toEqual({ key: 'API_TOKEN', deleted: true })
    expectError(await h.request('DELETE', `/v1/functions/${fn.id}/secrets/API_TOKEN`, { key: org.key }), 404, 'not_found')
  })
})

describe('secret caps', () => {
  test('at most 100 per function and 100 per organization, counted apart; replacing one at the cap is fine', async () => {
    const capped = await createOrg()
    const fn = (await deploy(OK_CODE, uniqueName(), capped)).body.data
    for (const [base, put] of [
      [`/v1/functions/${fn.id}/secrets`, (key: string) => `/v1/functions/${fn.id}/secrets/${key}`],
      ['/v1/org/secrets', (key: string) => `/v1/org/secrets/${key}`],
    ] as const) {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => h.request('POST', base, { key: capped.key, body: { key: `S_${i}`, value: 'v' } })),
      )
      expect(answers.map(r => r.status)).toEqual(Array(100).fill(201))
      const scope = base.startsWith('/v1/org') ? 'organization' : 'function'
      expectError(
        await h.request('POST', base, { key: capped.key, body: { key: 'ONE_MORE', value: 'v' } }),
        400,
        'validation_error',
        new RegExp(`^key: at most 100 secrets per ${scope}`),
      )
      expectError(await h.request('PUT', put('ONE_MORE'), { key: capped.key, body: { value: 'v' } }), 400, 'validation_error', /^key: at most 100/)
      expect((await h.request('PUT', put('S_7'), { key: capped.key, body: { value: 'replaced' } })).status).toBe(200)
      expect((await h.request('GET', base, { key: capped.key })).body.data).toHaveLength(100)
    }
    // a deleted secret frees its place
    await h.request('DELETE', '/v1/org/secrets/S_0', { key: capped.key })
    expect((await h.request('POST', '/v1/org/secrets', { key: capped.key, body: { key: 'ONE_MORE', value: 'v' } })).status).toBe(201)
  }, 30_000)
})

describe('managed builds', () => {
  const files = {
    'src/index.ts': `import { greet } from './lib/greet'\nexport default { async fetch(request: Request): Promise<Response> { return new Response(greet('you')) } }`,
    'src/lib/greet.ts': `export const greet = (name: string): string => 'hi ' + name`,
  }

  test('need the functions_managed_build entitlement', async () => {
    const res = await h.request('POST', '/v1/functions', { key: org.key, body: { name: uniqueName(), files, entry: 'src/index.ts' } })
    expectError(res, 403, 'feature_disabled')
    expect(res.body.error.details).toMatchObject({ missing_entitlement: 'functions_managed_build' })
  })

  test('are bundled with Bun.build, checked, and keep their sources', async () => {
    const platinum = await createOrg({ plan: 'platinum' })
    const res = await h.request('POST', '/v1/functions', { key: platinum.key, body: { name: uniqueName(), files, entry: 'src/index.ts' } })
    expect(res.status).toBe(201)
    expect(res.body.data).toMatchObject({ deploy_status: 'deployed', deployment: { status: 'deployed', managed_build: true } })
    const source = await h.request('GET', `/v1/functions/${res.body.data.id}/source`, { key: platinum.key })
    expect(source.body.data).toEqual({ deployment_id: res.body.data.deployment.id, entry: 'src/index.ts', files })
    const plain = await h.request('PUT', `/v1/functions/${res.body.data.id}`, { key: platinum.key, body: { code: OK_CODE } })
    expectError(await h.request('GET', `/v1/functions/${res.body.data.id}/source`, { key: platinum.key }), 404, 'not_found')
    const old = await h.request('GET', `/v1/functions/${res.body.data.id}/source?deployment_id=${res.body.data.deployment.id}`, { key: platinum.key })
    expect(old.body.data.files).toEqual(files)
    expect(plain.body.data.deployment.managed_build).toBe(false)
  })

  test('refuse imports outside the uploaded files, bad paths, a missing entry and mixed bodies', async () => {
    const platinum = await createOrg({ plan: 'platinum' })
    const deployFiles = (body: object) => h.request('POST', '/v1/functions', { key: platinum.key, body: { name: uniqueName(), ...body } })
    for (const imported of ['left-pad', 'node:fs', '../../../etc/passwd', '/etc/passwd', 'https://example.com/x.js']) {
      const res = await deployFiles({
        files: { 'index.js': `import x from '${imported}'\nexport default { fetch() { return new Response(String(x)) } }` },
        entry: 'index.js',
      })
      expectError(res, 400, 'validation_error', /^files: imports outside the uploaded files/)
    }
    expectError(await deployFiles({ files: { '../escape.js': 'x' }, entry: '../escape.js' }), 400, 'validation_error', /^files\.\.\.\/escape\.js: /)
    expectError(await deployFiles({ files: { 'a.js': 'x' }, entry: 'b.js' }), 400, 'validation_error', /^entry: /)
    expectError(await deployFiles({ files: { 'a.js': 'export default {' }, entry: 'a.js' }), 400, 'validation_error', /^files: the build failed/)
    expectError(await deployFiles({ code: OK_CODE, files: { 'a.js': 'x' }, entry: 'a.js' }), 400, 'validation_error', /^code: /)
    expectError(await deployFiles({}), 400, 'validation_error', /^code: is required/)
  })
})
