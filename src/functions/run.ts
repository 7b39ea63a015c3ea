/**
 * Running functions: the deploy check, and invocations with their env, records and logs. The
 * sandboxes themselves run in the process's sandbox threads (sandbox/pool.ts).
 */
import { randomUUIDv7 } from 'bun'
import { LRUCache } from 'lru-cache'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { cachedSigningSecrets } from '../account/webhook-secret'
import { runLimits } from './limits'
import { serveGuestFetch, type FetchScope } from './guest-fetch'
import { sandboxPool } from './sandbox/pool'
import type { GuestRequest, RunResult } from './sandbox/protocol'
import { secretsForInvocation } from './secrets'
import { recordChanges } from '../changes/record'
import { invocationChange } from '../changes/sources'
import { deploymentCode, type RunTarget, runTarget } from './deployment-queries'
import { insertActivity, insertInvocation, insertLogs } from './invocation-queries'

const pool = sandboxPool

/** Evaluates the module once, in the organization's share of the threads, and checks its default export; `ms` is the time the check took. */
export async function checkModule(ctx: AppContext, orgId: string, code: string) {
  const started = performance.now()
  const result = await pool(ctx).run(
    { kind: 'check', code, limits: runLimits(ctx.config) },
    async () => ({ error: 'fetch is not available while a module is deployed' }),
    orgId,
  )
  return {
    ok: result.outcome === 'ok',
    error: result.outcome === 'ok' ? null : (result.error ?? { name: 'Error', message: result.outcome, line: null, column: null, stack: null }),
    ms: Math.round((performance.now() - started) * 100) / 100,
  }
}

/** Deployed code by deployment id (immutable), bounded by total size: a bundle may be 64 MiB. */
const codeCache = new LRUCache<string, string>({ maxSize: 256 * 1024 * 1024, sizeCalculation: code => Math.max(1, code.length) })

/** The function's deployment to run (the current one unless named), or null when it has none or was deleted. */
async function target(sql: Tx, orgId: string, functionId: string, deploymentId?: string): Promise<(RunTarget & { code: string }) | null> {
  const row = await runTarget(sql, orgId, functionId, deploymentId)
  if (!row) return null
  let code = codeCache.get(row.deployment_id)
  if (code === undefined) {
    code = await deploymentCode(sql, row.deployment_id)
    codeCache.set(row.deployment_id, code)
  }
  return { ...row, code }
}

export interface InvokeInput {
  orgId: string
  functionId: string
  request: GuestRequest
  deploymentId?: string
  deliveryId?: string
  emailId?: string
  /** no side effects and no records: sends are captured, the invocation is not stored */
  dryRun?: boolean
}

export interface Invocation {
  invocationId: string
  deploymentId: string
  result: RunResult
  scope: FetchScope
}

/** Runs the function on a request and records the invocation; null when there is nothing to run. */
export async function invokeFunction(ctx: AppContext, input: InvokeInput): Promise<Invocation | null> {
  const t = await target(ctx.sql, input.orgId, input.functionId, input.deploymentId)
  if (!t) return null
  const [secrets, signing] = await Promise.all([secretsForInvocation(ctx, input.orgId, input.functionId), cachedSigningSecrets(ctx, input.orgId)])
  const env = {
    ...secrets,
    SERVICE_API_KEY: ctx.keys.decrypt(t.runtime_key_sealed),
    SERVICE_WEBHOOK_SECRET: signing[0]!,
    SERVICE_API_BASE_URL: `${ctx.config.PUBLIC_URL}/v1`,
  }
  const scope: FetchScope = { orgId: input.orgId, dryRun: input.dryRun ?? false, activity: [], captured: [] }
  const result = await pool(ctx).run(
    { kind: 'invoke', code: t.code, warmKey: t.deployment_id, request: input.request, env, limits: runLimits(ctx.config) },
    arg => serveGuestFetch(ctx, scope, arg),
    input.orgId,
  )
  const invocationId = randomUUIDv7()
  if (!input.dryRun) await recordInvocation(ctx, invocationId, t, input, result, scope)
  return { invocationId, deploymentId: t.deployment_id, result, scope }
}

async function recordInvocation(ctx: AppContext, id: string, t: RunTarget, input: InvokeInput, r: RunResult, scope: FetchScope) {
  await ctx.sql.begin(async tx => {
    await insertInvocation(tx, {
      id,
      org_id: input.orgId,
      function_id: input.functionId,
      deployment_id: t.deployment_id,
      delivery_id: input.deliveryId ?? null,
      email_id: input.emailId ?? null,
      outcome: r.outcome,
      cpu_ms: r.cpuMs,
      wall_ms: r.wallMs,
      request_method: input.request.method,
      request_url: input.request.url,
      response_status: r.response?.status ?? null,
      exception_name: r.error?.name ?? null,
      exception_message: r.error?.message ?? null,
      exception_stack: r.error?.stack ?? null,
      logs_truncated: r.logsTruncated,
      subrequests: r.subrequests,
    })
    if (r.logs.length) await insertLogs(tx, input.orgId, input.functionId, id, r.logs)
    for (const a of scope.activity) {
      await insertActivity(tx, { orgId: input.orgId, functionId: input.functionId, invocationId: id, deliveryId: input.deliveryId ?? null }, a)
    }
    await recordChanges(tx, [
      invocationChange({
        id,
        orgId: input.orgId,
        functionId: input.functionId,
        deploymentId: t.deployment_id,
        outcome: r.outcome,
        responseStatus: r.response?.status ?? null,
        deliveryId: input.deliveryId ?? null,
        emailId: input.emailId ?? null,
        cpuMs: r.cpuMs,
        wallMs: r.wallMs,
      }),
    ])
  })
}
