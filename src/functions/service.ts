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
import { revokeKeyById } from '../auth/api-key-queries'
import { createApiKey } from '../auth/api-keys'
import { deleteFunctionMemories } from '../memories/queries'
import { recordChanges } from '../changes/record'
import { deploymentChange } from '../changes/sources'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { isUniqueViolation } from '../db/errors'
import { planAccess, requireEntitlement } from '../account/access'
import { lockOrgForWebhooks } from '../webhooks/endpoint-queries'
import { deactivateFunctionEndpoints } from '../webhooks/queries'
import { bundleSources } from './build'
import { credentialCache } from '../auth/credentials'
import { CODE_GZIP_BYTES, CODE_RAW_BYTES, SOURCE_MAP_GZIP_BYTES, SOURCE_MAP_RAW_BYTES } from './limits'
import { checkModule } from './run'
import { type DeploymentRow, deploymentById, deploymentSources, deploymentsPage, insertDeployment } from './deployment-queries'
import {
  type FunctionRow,
  functionsPage,
  insertFunction,
  liveFunctionById,
  lockLiveFunction,
  markFunctionDeleted,
  touchFunctionDeployed,
  updateFunctionTags,
} from './queries'

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

/** A live function of the organization; deleted ones and other organizations' are not_found. */
export async function getFunction(sql: Tx, orgId: string, id: string): Promise<FunctionRow> {
  const row = await liveFunctionById(sql, orgId, id)
  if (!row) throw errors.notFound('function')
  return row
}

export function listFunctions(sql: Sql, orgId: string, page: PageRequest) {
  return functionsPage(sql, orgId, page)
}

/** GraphQL's loaders batch live functions by id from here. */

export async function listDeployments(sql: Sql, orgId: string, functionId: string, page: PageRequest) {
  await getFunction(sql, orgId, functionId)
  return deploymentsPage(sql, orgId, functionId, page)
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
  await insertDeployment(tx, {
    id,
    orgId,
    functionId,
    status: check.ok ? 'deployed' : 'failed',
    deployError,
    code: bundle.code,
    sourceMap: bundle.sourceMap ?? null,
    bundleBytes: bundle.rawBytes,
    gzipBytes: bundle.gzipBytes,
    buildMs: check.ms,
    sources: bundle.sources ?? null,
  })
  await touchFunctionDeployed(tx, functionId, check.ok ? id : null)
  const row = await deploymentById(tx, id)
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
      await insertFunction(tx, { id, orgId, name: input.name, runtimeKeyId: key.id, runtimeKeySealed: ctx.keys.encrypt(key.key) })
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
    if (!(await lockLiveFunction(tx, orgId, id))) throw errors.notFound('function')
    const deployment = await recordDeployment(tx, orgId, id, bundle, check)
    return { ...presentFunction(await getFunction(tx, orgId, id)), deployment: presentDeployment(deployment) }
  })
}

export async function setTags(sql: Sql, orgId: string, id: string, tags: string[]) {
  const unique = [...new Set(tags)]
  if (!(await updateFunctionTags(sql, orgId, id, unique))) throw errors.notFound('function')
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
    const fn = await markFunctionDeleted(tx, orgId, id)
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
  const row = id ? await deploymentSources(sql, orgId, functionId, id) : undefined
  if (!row) throw errors.notFound('deployment')
  if (!row.sources || !row.entry) throw errors.notFound('source (the deployment was uploaded as one module, not a managed build)')
  return { deployment_id: row.id, entry: row.entry, files: row.sources }
}
