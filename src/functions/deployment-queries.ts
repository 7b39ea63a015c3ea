/** The function_deployments table (functions/ owns it): its row types and every statement on it. */
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'

/** A deployment as the API shows it, with whether it is its function's current one. */
export interface DeploymentRow {
  id: string
  function_id: string
  status: 'deployed' | 'failed'
  deploy_error: DeployError | null
  build_ms: number
  bundle_bytes: number
  gzip_bytes: number
  has_source_map: boolean
  managed_build: boolean
  is_current: boolean
  created_at: Date
}

/** Why a deployment's check failed, where the module says (a type, not an interface, so it is JSON to postgres.js). */
export type DeployError = {
  name: string
  message: string
  line: number | null
  column: number | null
}

const deploymentColumns = (sql: Tx) => sql`
  d.id, d.function_id, d.status, d.deploy_error, d.build_ms, d.bundle_bytes, d.gzip_bytes,
  d.source_map is not null as has_source_map, d.sources is not null as managed_build, f.current_deployment_id is not distinct from d.id as is_current, d.created_at`

/** A page of a function's deployments, newest first. */
export function deploymentsPage(sql: Sql, orgId: string, functionId: string, page: PageRequest) {
  return listPage<DeploymentRow>(sql, {
    columns: deploymentColumns(sql),
    from: sql`function_deployments d`,
    join: sql`join functions f on f.id = d.function_id`,
    where: sql`d.function_id = ${functionId} and d.org_id = ${orgId}`,
    page,
    idColumn: 'd.id',
  })
}

/** What a deployment stores: the checked module, and a managed build's uploaded files and entry. */
export interface NewDeployment {
  id: string
  orgId: string
  functionId: string
  status: DeploymentRow['status']
  deployError: DeployError | null
  code: string
  sourceMap: string | null
  bundleBytes: number
  gzipBytes: number
  buildMs: number
  sources: { files: Record<string, string>; entry: string } | null
}

export async function insertDeployment(tx: Tx, d: NewDeployment): Promise<void> {
  await tx`
    insert into function_deployments (id, org_id, function_id, status, deploy_error, code, source_map, bundle_bytes, gzip_bytes, build_ms, sources, entry)
    values (${d.id}, ${d.orgId}, ${d.functionId}, ${d.status}, ${d.deployError ? tx.json(d.deployError) : null}, ${d.code},
            ${d.sourceMap}, ${d.bundleBytes}, ${d.gzipBytes}, ${d.buildMs},
            ${d.sources ? tx.json(d.sources.files) : null}, ${d.sources?.entry ?? null})`
}

export async function deploymentById(sql: Tx, id: string): Promise<DeploymentRow | undefined> {
  const [row] = await sql<DeploymentRow[]>`
    select ${deploymentColumns(sql)} from function_deployments d join functions f on f.id = d.function_id where d.id = ${id}`
  return row
}

/** The uploaded sources of one of a function's deployments (null for a deployment uploaded as one module). */
export async function deploymentSources(
  sql: Sql,
  orgId: string,
  functionId: string,
  id: string,
): Promise<{ id: string; sources: Record<string, string> | null; entry: string | null } | undefined> {
  const [row] = await sql<{ id: string; sources: Record<string, string> | null; entry: string | null }[]>`
    select id, sources, entry from function_deployments where id = ${id} and function_id = ${functionId} and org_id = ${orgId}`
  return row
}

/** The status of one of a function's deployments; none when the function has no such deployment. */
export async function deploymentStatus(sql: Sql, orgId: string, functionId: string, id: string): Promise<DeploymentRow['status'] | undefined> {
  const [d] = await sql<{ status: DeploymentRow['status'] }[]>`
    select status from function_deployments where id = ${id} and function_id = ${functionId} and org_id = ${orgId}`
  return d?.status
}

/** What an invocation runs: the live function's deployment, and its runtime key sealed. */
export interface RunTarget {
  function_id: string
  org_id: string
  deployment_id: string
  runtime_key_sealed: Buffer
}

/** The live function's deployed deployment `deploymentId` (the current one when undefined); none when it has none or was deleted. */
export async function runTarget(sql: Tx, orgId: string, functionId: string, deploymentId?: string): Promise<RunTarget | undefined> {
  const [row] = await sql<RunTarget[]>`
    select f.id as function_id, f.org_id, d.id as deployment_id, f.runtime_key_sealed
      from functions f join function_deployments d on d.id = coalesce(${deploymentId ?? null}::uuid, f.current_deployment_id)
     where f.id = ${functionId} and f.org_id = ${orgId} and f.deleted_at is null and d.function_id = f.id and d.status = 'deployed'`
  return row
}

/** A deployment's code (it exists: the id comes from `runTarget`). */
export async function deploymentCode(sql: Tx, id: string): Promise<string> {
  const [d] = await sql<{ code: string }[]>`select code from function_deployments where id = ${id}`
  return d!.code
}
