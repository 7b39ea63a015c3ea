/**
 * One way to make errors (src/errors.ts): the list of codes holds only what something
 * throws, the OpenAPI document lists that list, and docs_url is absolute everywhere. (Retry-After
 * and the message agreeing is checked on every error by `expectError`.)
 */
import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { ERROR_STATUS } from '../src/errors'
import { createOrg, testApp } from './helpers/app'
import { expectError } from './helpers/envelope'

const root = `${import.meta.dir}/..`

describe('the list of error codes', () => {
  test('every listed code is thrown somewhere in src/ (outside the list itself)', async () => {
    let source = ''
    for await (const file of new Glob('src/**/*.ts').scan(root)) {
      if (file !== 'src/errors.ts') source += await Bun.file(`${root}/${file}`).text()
    }
    // errors.ts's own factories make these
    const factories = [
      'unauthorized',
      'conflict',
      'feature_disabled',
      'method_not_allowed',
      'recipient_not_allowed',
      'validation_error',
      'not_found',
      'forbidden',
    ]
    const unused = Object.keys(ERROR_STATUS).filter(code => !factories.includes(code) && !source.includes(`'${code}'`))
    expect(unused).toEqual([])
  })

  test('the OpenAPI document names exactly these codes', async () => {
    const app = await testApp()
    const doc = (await app.request('GET', '/v1/openapi')).body
    const listed = [...(doc.info.description as string).matchAll(/([a-z_]+) \((\d{3})\)/g)].map(m => [m[1], Number(m[2])])
    expect(Object.fromEntries(listed)).toEqual(ERROR_STATUS)
  })
})

describe('docs_url', () => {
  test('an entitlement error points at the reference under SITE_URL', async () => {
    const app = await testApp({ SITE_URL: 'https://site.test.local' })
    const org = await createOrg({ plan: 'free' })
    const res = await app.request('POST', '/v1/x402/payout-addresses', { key: org.key, body: {} })
    expectError(res, 403, 'feature_disabled')
    expect(res.body.error.details.docs_url).toBe('https://site.test.local/docs#entitlements')
  })
})
