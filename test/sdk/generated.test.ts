/**
 * The committed SDK types (sdk/src/schema.ts) are what the generator makes of the service's
 * OpenAPI document now: a route or schema changed without `bun sdk/scripts/generate.ts` fails
 * here. The service runs with the development defaults the generator is run against.
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { generate, SCHEMA_FILE } from '../../sdk/scripts/generate'
import { testApp } from '../helpers/app'

test('sdk/src/schema.ts is generated from the running service', async () => {
  const { request } = await testApp({ MANAGED_DOMAIN: 'agents.localhost' })
  const res = await request('GET', '/v1/openapi')
  expect(res.status).toBe(200)
  const fresh = await generate(res.body)
  const committed = readFileSync(SCHEMA_FILE, 'utf8')
  if (fresh !== committed) {
    throw new Error('sdk/src/schema.ts is out of date: start `make dev` and run `make sdk` (docs/sdk.md)')
  }
  // the error codes are a closed union, so a caller's `switch (error.code)` is checked
  expect(committed).toContain('"not_found"')
}, 60_000)
