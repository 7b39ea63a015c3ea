/** /docs: the human reference, from the same OpenAPI document, with every asset served here. */
import { describe, expect, test } from 'bun:test'
import { testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'

const app = await testApp()

async function get(path: string) {
  const res = await app.app.handle(new Request(`http://api.test.local${path}`, { headers: { 'x-forwarded-for': '192.0.2.90' } }))
  return { status: res.status, headers: res.headers, text: await res.text() }
}

describe('/docs', () => {
  test('the docs_url of GET /v1 serves an HTML reference', async () => {
    const docsUrl = new URL(expectOk(await app.request('GET', '/v1')).docs_url)
    const page = await get(docsUrl.pathname)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    expect(page.text).toContain('<div id="operations"></div>')
    expect(page.text).toContain('href="/v1/openapi"')
  })

  test('every script, stylesheet and icon it loads is served by this service; nothing comes from elsewhere', async () => {
    const page = await get('/docs')
    const refs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map(m => m[1]!)
    expect(refs.filter(r => /^(https?:)?\/\//.test(r))).toEqual([])
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'")
    const assets = refs.filter(r => r.startsWith('/docs/assets/'))
    expect(assets.length).toBeGreaterThanOrEqual(4)
    for (const asset of assets) {
      const res = await get(asset)
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 })
      expect(res.text.length).toBeGreaterThan(100)
    }
    expect((await get('/docs/assets/swagger-ui-bundle.js')).headers.get('content-type')).toStartWith('text/javascript')
    // the init script points Swagger UI at our own document and switches off its online validator
    const init = (await get('/docs/assets/init.js')).text
    expect(init).toContain("url: '/v1/openapi'")
    expect(init).toContain('validatorUrl: null')
  })

  test('only the listed assets are reachable, in the error envelope otherwise', async () => {
    for (const path of ['/docs/assets/package.json', '/docs/assets/..%2F..%2Fpackage.json', '/docs/assets/index.html']) {
      const res = await app.request('GET', path)
      expectError(res, 404, 'not_found')
    }
  })

  test('the anchors that error docs_urls point at exist on the page, drawn from the same tables', async () => {
    const page = (await get('/docs')).text
    for (const anchor of ['errors', 'entitlements', 'send-gates', 'suppressions', 'deprecations']) expect(page).toContain(`id="${anchor}"`)
    expect(page).toContain('<td>database_unavailable</td><td>503</td>')
    expect(page).toContain('<td>x402_payments</td><td>power, platinum</td>')
    expect(page).toContain('GET /v1/me')
  })

  test('the reference is not an operation of the API it documents', async () => {
    const openapi = (await app.request('GET', '/v1/openapi')).body
    expect(Object.keys(openapi.paths).filter((p: string) => p.startsWith('/docs'))).toEqual([])
  })
})
