/** REST options of declared operations that no feature's tests pin down: onePage's meta. */
import { expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'

test('onePage: the whole list as one page, meta total and limit its length and no cursor; paging is not taken', async () => {
  const t = await testApp()
  const org = await createOrg()
  const res = await t.request('GET', '/v1/registries?limit=1', { key: org.key })
  expect(res.status).toBe(200)
  const n = res.body.data.length
  expect(n).toBeGreaterThanOrEqual(1)
  expect(res.body.meta).toEqual({ total: n, limit: n, cursor: null })
})
