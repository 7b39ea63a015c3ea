/**
 * The MCP project's conformance suite (@modelcontextprotocol/conformance, run offline) against
 * /mcp, for the server scenarios that apply to this server: the handshake, ping and tools/list,
 * and DNS-rebinding protection. (The others test fixture tools, resources, prompts, logging,
 * sampling and elicitation that a mail server does not have.) The runner cannot send a
 * credential, so a loopback proxy adds the API key to every request it forwards.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createApp } from '../../src/app'
import { createContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { createOrg, TEST_SECRET, testConfig, testSql } from '../helpers/app'
import { PLUGINS } from '../../src/plugins'

const RUNNER = join(import.meta.dir, '../../node_modules/@modelcontextprotocol/conformance/dist/index.js')
export const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection']

let app: { stop(force?: boolean): unknown }
let proxy: ReturnType<typeof Bun.serve>

async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

beforeAll(async () => {
  const port = await freePort()
  const proxyPort = await freePort()
  // the runner talks to the proxy, so the proxy's origin is the service's own (the Origin check)
  const ctx = createContext(testConfig({ PUBLIC_URL: `http://localhost:${proxyPort}` }), await testSql(), new ServerKeys(TEST_SECRET), { plugins: PLUGINS })
  app = createApp(ctx).listen({ port, hostname: '127.0.0.1' })
  const org = await createOrg()
  proxy = Bun.serve({
    port: proxyPort,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      const headers = new Headers(request.headers)
      headers.set('authorization', `Bearer ${org.key}`)
      headers.set('x-forwarded-for', '198.51.100.77')
      return fetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`, { method: request.method, headers, body: request.body, redirect: 'manual' })
    },
  })
})
afterAll(async () => {
  await proxy.stop(true)
  await app.stop(true)
})

for (const scenario of SCENARIOS) {
  test(`conformance: ${scenario}`, async () => {
    const run = Bun.spawn(['bun', RUNNER, 'server', '--url', `http://localhost:${proxy.port}/mcp`, '--scenario', scenario], { stdout: 'pipe', stderr: 'pipe' })
    const [out, err, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
    expect({ scenario, code, output: code === 0 ? '' : out + err }).toEqual({ scenario, code: 0, output: '' })
  }, 60_000)
}
