import { describe, expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'

describe('smoke', () => {
  test('whoami', async () => {
    const { request } = await testApp()
    const org = await createOrg()
    const res = await request('GET', '/v1/whoami', { key: org.key })
    console.log(res.status, res.body, Object.fromEntries(res.headers))
    expect(res.status).toBe(200)
  })
})
