/** GraphQL requests against the test app: POST by default, GET on request. */
import { expect } from 'bun:test'
import type { TestApp, TestResponse } from '../helpers/app'

export interface GqlOptions {
  key?: string
  variables?: Record<string, unknown>
  method?: 'GET' | 'POST'
  operationName?: string
}

export function gql(t: TestApp, query: string, opts: GqlOptions = {}): Promise<TestResponse> {
  if (opts.method === 'GET') {
    const params = new URLSearchParams({ query })
    if (opts.variables) params.set('variables', JSON.stringify(opts.variables))
    if (opts.operationName) params.set('operationName', opts.operationName)
    return t.request('GET', `/graphql?${params}`, { key: opts.key })
  }
  return t.request('POST', '/graphql', { key: opts.key, body: { query, variables: opts.variables, operationName: opts.operationName } })
}

/** The data of a query that must succeed without a single field error. */
export async function gqlData(t: TestApp, query: string, opts: GqlOptions = {}): Promise<any> {
  const res = await gql(t, query, opts)
  if (res.status !== 200 || res.body.errors) throw new Error(`GraphQL failed (${res.status}): ${JSON.stringify(res.body)}`)
  expect(res.body.data).toBeDefined()
  return res.body.data
}

/** The codes of a response's errors, by path (`-` for request errors without one). */
export const errorCodes = (res: TestResponse): Record<string, string> =>
  Object.fromEntries(
    (res.body.errors ?? []).map((e: { path?: (string | number)[]; extensions: { code: string } }) => [e.path?.join('.') ?? '-', e.extensions.code]),
  )
