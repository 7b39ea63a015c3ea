/**
 * Functions: deploy, redeploy, read, tag, delete. A deploy checks the module once in a sandbox
 * (it must evaluate, and its default export must have a fetch method) before anything is
 * written; a failed check is recorded as a `failed` deployment with its error, and the current
 * deployment stays what it was. Each function has a runtime API key with no creator
 * (SERVICE_API_KEY), sealed so invocations can hand it to the guest, revoked on delete.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Sql, Tx } from '../db/client'
import { transaction } from '../db/transaction'
import { createApiKey, revokeKeyById } from '../auth/api-keys'
import { deleteFunctionMemories } from '../memories/queries'
import { recordChanges } from '../changes/record'
import { deploymentChange } from '../changes/sources'
import { errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { isUniqueViolation } from '../db/errors'
import { planAccess, requireEntitlement } from '../account/access'
import { lockOrgForWebhooks } from '../webhooks/endpoint-queries'
import { deactivateFunctionEndpoints, liveEndpoints } from '../webhooks/queries'
import { bundleSources } from './build'
import { credentialCache } from '../auth/credentials'
import { CODE_GZIP_BYTES, CODE_RAW_BYTES, SOURCE_MAP_GZIP_BYTES, SOURCE_MAP_RAW_BYTES } from './limits'
import { checkModule } from './run'

export interface FunctionRow {
  id: string
  org_id: string
  name: string
  tags: string[]
  current_deployment_id: string | null
  runtime_key_id: string
  created_at: Date
  updated_at: Date
  endpoint_id: string | null
  endpoint_domain_id: string | null
  endpoint_enabled: boolean | null
  endpoint_route_target: boolean | null
}

export interface DeploymentRow {
  id: string
  function_id: string
  status: 'deployed' | 'failed'
  deploy_error: { name: string; message: string; line: number | null; column: number | null } | null
  build_ms: number
  bundle_bytes: number
  gzip_bytes: number
  has_source_map: boolean
  managed_build: boolean
  is_current: boolean
  created_at: Date
}

export function presentFunction(row: FunctionRow) {
  return {
    id: row.id,
    name: row.name,
    deploy_status: row.current_deployment_id ? ('deployed' as const) : ('failed' as const),
    current_deployment_id: row.current_deployment_id,
    tags: row.tags,
    endpoint_id: row.endpoint_id,
    route: row.endpoint_id ? { domain_id: row.endpoint_domain_id, enabled: row.endpoint_enabled!, is_route_target: row.endpoint_route_target! } : null,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  }
}

export function presentDeployment(row: DeploymentRow) {
  return {
    id: row.id,
    function_id: row.function_id,
    status: row.status,
    deploy_error: row.deploy_error,
    build_ms: row.build_ms,
    bundle_bytes: row.bundle_bytes,
    gzip_bytes: row.gzip_bytes,
    has_source_map: row.has_source_map,
    managed_build: row.managed_build,
    is_current: row.is_current,
    created_at: iso(row.created_at)!,
  }
}

const functionColumns = (sql: Tx) => sql`
  f.id, f.org_id, f.name, f.tags, f.current_deployment_id, f.runtime_key_id, f.created_at, f.updated_at,
  e.id as endpoint_id, e.domain_id as endpoint_domain_id, e.enabled as endpoint_enabled, e.is_route_target as endpoint_route_target`
const withEndpoint = (sql: Tx) => sql`left join ${liveEndpoints(sql)} e on e.org_id = f.org_id and e.function_id = f.id`

/** A live function of the organization; deleted ones and other organizations' are not_found. */
export async function getFunction(sql: Tx, orgId: string, id: string): Promise<FunctionRow> {
  const [row] = await sql<FunctionRow[]>`
    select ${functionColumns(sql)} from functions f ${withEndpoint(sql)}
     where f.id = ${id} and f.org_id = ${orgId} and f.deleted_at is null`
  if (!row) throw errors.notFound('function')
  return row
}

export async function listFunctions(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<FunctionRow>(sql, {
    columns: functionColumns(sql),
    from: sql`functions f`,
    join: withEndpoint(sql),
    where: sql`f.org_id = ${orgId} and f.deleted_at is null`,
    page,
    idColumn: 'f.id',
  })
}

/** Live functions by id, in any order, for readers that batch (GraphQL). */
export async function functionsByIds(sql: Sql, orgId: string, ids: readonly string[]): Promise<FunctionRow[]> {
  return sql<FunctionRow[]>`
    select ${functionColumns(sql)} from functions f ${withEndpoint(sql)}
     where f.id = any(${ids}::uuid[]) and f.org_id = ${orgId} and f.deleted_at is null`
}

const deploymentColumns = (sql: Tx) => sql`
  d.id, d.function_id, d.status, d.deploy_error, d.build_ms, d.bundle_bytes, d.gzip_bytes,
  d.source_map is not null as has_source_map, d.sources is not null as managed_build, f.current_deployment_id is not distinct from d.id as is_current, d.created_at`

export async function listDeployments(sql: Sql, orgId: string, functionId: string, page: PageRequest) {
  await getFunction(sql, orgId, functionId)
  return listPage<DeploymentRow>(sql, {
    columns: deploymentColumns(sql),
    from: sql`function_deployments d`,
    join: sql`join functions f on f.id = d.function_id`,
    where: sql`d.function_id = ${functionId} and d.org_id = ${orgId}`,
    page,
    idColumn: 'd.id',
  })
}

interface Bundle {
  code: string
  sourceMap?: string
  /** a managed build's uploaded files and entry */
  sources?: { files: Record<string, string>; entry: string }
}

/** What a deploy request carries: one module, or files for a managed build. */
export interface DeployInput {
  code?: string
  sourceMap?: string
  files?: Record<string, string>
  entry?: string
}

/** The module to deploy: the uploaded one, or the bundle of a managed build (entitlement functions_managed_build). */
async function bundleOf(ctx: AppContext, orgId: string, input: DeployInput): Promise<Bundle> {
  if (input.files === undefined && input.entry === undefined) {
    if (input.code === undefined) throw errors.validation('code', 'is required (or files and entry for a managed build)')
    return { code: input.code, sourceMap: input.sourceMap }
  }
  if (input.code !== undefined || input.sourceMap !== undefined)
    throw errors.validation('code', 'must not be sent with files: send one module, or files and entry for a managed build')
  requireEntitlement(
    await planAccess(ctx.sql, orgId),
    'functions_managed_build',
    'files: managed builds need the functions_managed_build entitlement; bundle the module yourself and send it as code',
  )
  if (input.files === undefined) throw errors.validation('files', 'is required with entry')
  if (input.entry === undefined) throw errors.validation('entry', 'is required with files')
  return { code: await bundleSources(input.files, input.entry), sources: { files: input.files, entry: input.entry } }
}

interface CheckedBundle extends Bundle {
  rawBytes: number
  gzipBytes: number
}

/**
 * The size limits, in the documented order: raw sizes first (cheap), then gzip sizes, each
 * naming its field.
 */
function checkBundleSize(bundle: Bundle): CheckedBundle {
  const MiB = 1024 * 1024
  const rawCode = Buffer.byteLength(bundle.code)
  if (rawCode > CODE_RAW_BYTES) throw errors.validation('code', `is ${rawCode} bytes; at most ${CODE_RAW_BYTES / MiB} MiB raw`)
  if (bundle.sourceMap !== undefined) {
    const rawMap = Buffer.byteLength(bundle.sourceMap)
    if (rawMap > SOURCE_MAP_RAW_BYTES) throw errors.validation('sourceMap', `is ${rawMap} bytes; at most ${SOURCE_MAP_RAW_BYTES / MiB} MiB raw`)
  }
  const gzipCode = Bun.gzipSync(bundle.code).byteLength
  if (gzipCode > CODE_GZIP_BYTES) throw errors.validation('code', `is ${gzipCode} bytes gzipped; at most ${CODE_GZIP_BYTES / MiB} MiB gzipped`)
  if (bundle.sourceMap !== undefined) {
    const gzipMap = Bun.gzipSync(bundle.sourceMap).byteLength
    if (gzipMap > SOURCE_MAP_GZIP_BYTES) throw errors.validation('sourceMap', `is ${gzipMap} bytes gzipped; at most ${SOURCE_MAP_GZIP_BYTES / MiB} MiB gzipped`)
  }
  return { ...bundle, rawBytes: rawCode, gzipBytes: gzipCode }
}

/** Checks the module in a sandbox and records the deployment; current when it passed. */
async function recordDeployment(
  tx: Tx,
  orgId: string,
  functionId: string,
  bundle: CheckedBundle,
  check: Awaited<ReturnType<typeof checkModule>>,
): Promise<DeploymentRow> {
  const id = randomUUIDv7()
  const deployError = check.error ? { name: check.error.name, message: check.error.message, line: check.error.line, column: check.error.column } : null
  await tx`
    insert into function_deployments (id, org_id, function_id, status, deploy_error, code, source_map, bundle_bytes, gzip_bytes, build_ms, sources, entry)
    values (${id}, ${orgId}, ${functionId}, ${check.ok ? 'deployed' : 'failed'}, ${deployError ? tx.json(deployError) : null}, ${bundle.code},
            ${bundle.sourceMap ?? null}, ${bundle.rawBytes}, ${bundle.gzipBytes}, ${check.ms},
            ${bundle.sources ? tx.json(bundle.sources.files) : null}, ${bundle.sources?.entry ?? null})`
  if (check.ok) await tx`update functions set current_deployment_id = ${id}, updated_at = now() where id = ${functionId}`
  else await tx`update functions set updated_at = now() where id = ${functionId}`
  const [row] = await tx<DeploymentRow[]>`
    select ${deploymentColumns(tx)} from function_deployments d join functions f on f.id = d.function_id where d.id = ${id}`
  await recordChanges(tx, [deploymentChange(orgId, row!)])
  return row!
}

/** POST /functions: creates the function and its first deployment (in `sql`'s transaction when it is one: see db/transaction.ts). */
export async function deployFunction(ctx: AppContext, orgId: string, input: { name: string } & DeployInput, sql: Tx = ctx.sql) {
  const started = performance.now()
  const bundle = checkBundleSize(await bundleOf(ctx, orgId, input))
  const check = await checkModule(ctx, orgId, bundle.code)
  check.ms = Math.round((performance.now() - started) * 100) / 100
  try {
    return await transaction(sql, async tx => {
      const id = randomUUIDv7()
      const key = await createApiKey(tx, orgId, null, `function ${input.name} runtime`, id)
      await tx`
        insert into functions (id, org_id, name, runtime_key_id, runtime_key_sealed)
        values (${id}, ${orgId}, ${input.name}, ${key.id}, ${ctx.keys.encrypt(key.key)})`
      const deployment = await recordDeployment(tx, orgId, id, bundle, check)
      return { ...presentFunction(await getFunction(tx, orgId, id)), deployment: presentDeployment(deployment) }
    })
  } catch (error) {
    if (isUniqueViolation(error, 'functions_name_key'))
      throw errors.conflict(`name: a function named ${input.name} already exists; redeploy it with PUT /v1/functions/{id}`)
    throw error
  }
}

/** PUT /functions/{id}: a new deployment, current when its check passes. */
export async function redeployFunction(ctx: AppContext, orgId: string, id: string, input: { name?: string } & DeployInput) {
  const current = await getFunction(ctx.sql, orgId, id)
  if (input.name !== undefined && input.name !== current.name) throw errors.validation('name', `is immutable; this function is named ${current.name}`)
  const started = performance.now()
  const bundle = checkBundleSize(await bundleOf(ctx, orgId, input))
  const check = await checkModule(ctx, orgId, bundle.code)
  check.ms = Math.round((performance.now() - started) * 100) / 100
  return ctx.sql.begin(async tx => {
    // locks the row: concurrent redeploys of one function become current in commit order
    const [live] = await tx`select id from functions where id = ${id} and org_id = ${orgId} and deleted_at is null for update`
    if (!live) throw errors.notFound('function')
    const deployment = await recordDeployment(tx, orgId, id, bundle, check)
    return { ...presentFunction(await getFunction(tx, orgId, id)), deployment: presentDeployment(deployment) }
  })
}

export async function setTags(sql: Sql, orgId: string, id: string, tags: string[]) {
  const unique = [...new Set(tags)]
  const [row] = await sql`update functions set tags = ${unique}, updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null returning id`
  if (!row) throw errors.notFound('function')
  return presentFunction(await getFunction(sql, orgId, id))
}

/**
 * Deletes a function: its reads are 404 from now on, its runtime key stops working, its
 * endpoint is deactivated (freeing its slot) with the routes to it. Its deliveries stay in the
 * delivery history.
 */
export async function deleteFunction(ctx: AppContext, orgId: string, id: string) {
  const row = await ctx.sql.begin(async tx => {
    await lockOrgForWebhooks(tx, orgId)
    const [fn] = await tx<{ id: string; runtime_key_id: string }[]>`
      update functions set deleted_at = now(), updated_at = now()
       where id = ${id} and org_id = ${orgId} and deleted_at is null returning id, runtime_key_id`
    if (!fn) throw errors.notFound('function')
    await revokeKeyById(tx, fn.runtime_key_id)
    await deactivateFunctionEndpoints(tx, orgId, id)
    await deleteFunctionMemories(tx, orgId, id)
    return fn
  })
  credentialCache(ctx).evict({ keyId: row.runtime_key_id })
  return { id, deleted: true as const }
}

/** The uploaded sources of a managed-build deployment (default the current one). */
export async function getSource(sql: Sql, orgId: string, functionId: string, deploymentId?: string) {
  const fn = await getFunction(sql, orgId, functionId)
  const id = deploymentId ?? fn.current_deployment_id
  const [row] = id
    ? await sql<{ id: string; sources: Record<string, string> | null; entry: string | null }[]>`
        select id, sources, entry from function_deployments where id = ${id} and function_id = ${functionId} and org_id = ${orgId}`
    : []
  if (!row) throw errors.notFound('deployment')
  if (!row.sources || !row.entry) throw errors.notFound('source (the deployment was uploaded as one module, not a managed build)')
  return { deployment_id: row.id, entry: row.entry, files: row.sources }
}
