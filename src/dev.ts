/**
 * `make dev`: the service on its embedded default, plus a development organization (created
 * once, on the developer plan) whose API key is printed at every start. The key is kept in
 * DATA_DIR/dev-org.json because the database only stores its hash.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createOrgCommand } from './admin/commands'
import { exitOnSignals, startService } from './index'

const service = await startService()
exitOnSignals(service)
const { config, sql } = service.ctx
const file = `${config.DATA_DIR}/dev-org.json`

type DevOrg = Awaited<ReturnType<typeof createOrgCommand>>
let org: DevOrg | undefined = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined
if (!org || !(await sql`select 1 from orgs where id = ${org.org_id}`).length) {
  org = await createOrgCommand(sql, { plan: 'developer', email: 'dev@localhost', name: 'Development' })
  writeFileSync(file, JSON.stringify(org, null, 2), { mode: 0o600 })
}

const api = `http://localhost:${service.running.apiPort}`
console.log(`
  agent mail service is running (embedded database under ${config.DATA_DIR}/)

  API          ${api}/v1
  OpenAPI      ${api}/v1/openapi
  Health       ${api}/v1/health
  SMTP         localhost:${service.running.smtpPort ?? config.SMTP_PORT} (managed domain ${config.MANAGED_DOMAIN})

  Development organization ${org.org_id} (developer plan)
  API key      ${org.api_key}

  Try it:      curl -H "Authorization: Bearer ${org.api_key}" ${api}/v1/whoami
  More keys:   stop this process, then  bun run admin key create ${org.org_id}
`)
