/**
 * The SDK outside Bun: built with its own tsconfig (`bun run build` in sdk/, what `npm pack`
 * runs first) and imported by its package name from plain Node.js, which resolves the
 * package's exports to dist/. It calls the service on a real port and throws its typed errors.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createOrg, type TestOrg } from '../helpers/app'
import { REPO } from '../helpers/dev-process'
import { cliService, type CliService } from '../cli-client/helpers'

let s: CliService
let org: TestOrg

beforeAll(async () => {
  s = await cliService()
  org = await createOrg()
})
afterAll(() => s.stop())

const SCRIPT = `
import { AgentMail, AgentMailError } from '@agent-mail/sdk'
const [baseUrl, apiKey] = process.argv.slice(1)
const me = await new AgentMail({ baseUrl, apiKey }).get('/v1/whoami')
let refused
try {
  await new AgentMail({ baseUrl, apiKey: 'svc_not_a_real_key' }).get('/v1/whoami')
} catch (error) {
  refused = error instanceof AgentMailError && { code: error.code, status: error.status }
}
console.log(JSON.stringify({ org_id: me.org_id, refused }))
`

test('built to dist/, it runs on Node.js by its package name', async () => {
  const build = Bun.spawn([process.execPath, 'x', 'tsc', '-p', join(REPO, 'sdk')], { cwd: REPO, stdout: 'pipe', stderr: 'pipe' })
  const [buildOut, built] = await Promise.all([new Response(build.stdout).text(), build.exited])
  expect({ built, buildOut }).toEqual({ built: 0, buildOut: '' })
  const node = Bun.spawn(['node', '--input-type=module', '-e', SCRIPT, s.origin, org.key], { cwd: REPO, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(node.stdout).text(), new Response(node.stderr).text(), node.exited])
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
  expect(JSON.parse(stdout)).toEqual({ org_id: org.orgId, refused: { code: 'unauthorized', status: 401 } })
}, 120_000)
