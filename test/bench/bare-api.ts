/**
 * The baselines of the HTTP section, in a process of its own:
 * `bun test/bench/bare-api.ts <bun|node> <port>` serves, with no framework, no authentication,
 * no request log and no rate limiter,
 *
 * - GET /v1/whoami: the JSON body in BENCH_WHOAMI (the service's own answer), as is;
 * - GET /v1/emails?limit=50: the same SQL as the service's list (listEmails, for BENCH_ORG_ID),
 *   each row presented and wrapped like the service's page;
 * - POST /v1/inboxes: the same insert as the service's (createInbox), 201 with the inbox.
 *
 * `bun`: Bun.serve; `node`: Bun's node:http, the listener the api role uses (src/http/serve.ts),
 * so the two together measure what node:http costs. Runs until killed.
 */
import http from 'node:http'
import { connectUrl } from '../../src/db/client'
import { presentSummary } from '../../src/emails/service'
import { listEmails } from '../../src/mail/email-queries'
import { createInbox, presentManagedInbox } from '../../src/inboxes/service'

const [mode, portArg] = process.argv.slice(2)
const sql = connectUrl(process.env.DATABASE_URL!, 10)
const orgId = process.env.BENCH_ORG_ID!
const whoami = process.env.BENCH_WHOAMI ?? '{}'
const domain = process.env.MANAGED_DOMAIN ?? 'agents.bench.local'

async function answer(method: string, path: string): Promise<[number, string]> {
  if (method === 'GET' && path.startsWith('/v1/whoami')) return [200, whoami]
  if (method === 'GET' && path.startsWith('/v1/emails')) {
    const { rows, total } = await listEmails(sql, orgId, { limit: 50, after: null }, { since: null, addresses: [] })
    return [200, JSON.stringify({ success: true, data: rows.slice(0, 50).map(presentSummary), meta: { total, limit: 50, cursor: null } })]
  }
  if (method === 'POST' && path.startsWith('/v1/inboxes'))
    return [201, JSON.stringify({ success: true, data: presentManagedInbox(await createInbox(sql, orgId, domain, {})) })]
  return [404, '{"success":false}']
}

const headers = { 'content-type': 'application/json' }
if (mode === 'bun') {
  Bun.serve({
    port: Number(portArg),
    hostname: '127.0.0.1',
    async fetch(req) {
      const [status, body] = await answer(req.method, new URL(req.url).pathname)
      return new Response(body, { status, headers })
    },
  })
} else {
  http
    .createServer(async (req, res) => {
      // drain a body, as a framework would
      for await (const _ of req);
      const [status, body] = await answer(req.method ?? 'GET', req.url ?? '/')
      res.writeHead(status, headers).end(body)
    })
    .listen(Number(portArg), '127.0.0.1')
}
