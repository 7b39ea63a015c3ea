/**
 * Delivering a wake run: an endpoint gets a signed POST (as webhooks are signed), a function an
 * invocation with the same body, an agent connection a `wake.command` change on its feed. Every
 * attempt carries the run's id (`run_id`, `webhook-id`, `X-Wake-Run-Id`), so a receiver dedupes
 * retries. A one-shot wake disables itself after its run is delivered.
 */
import type { AppContext } from '../context'
import type { JobKind } from '../jobs/kind'
import type { Job } from '../jobs/queue'
import { cachedSigningSecrets } from '../account/webhook-secret'
import { recordChanges } from '../changes/record'
import { mailEvents } from '../events'
import { postWebhook } from '../egress/checked-fetch'
import { signedHeaders } from '../webhooks/signing'
import { checkWebhookUrl } from '../egress/url-safety'
import { invokeFunction } from '../functions/run'
import { disableWake, finishRun, type LoadedRun, loadRun, type RunRow, setRunAttempts, setRunError, type WakeRow } from './queries'
import { WAKE_RUN_KIND } from './service'

/** The body every target receives. */
export function runBody(run: RunRow, wake: WakeRow, attempt: number) {
  return {
    type: 'wake.run',
    id: run.id,
    run_id: run.id,
    wake_id: wake.id,
    command: { name: wake.command.name, payload: wake.command.payload ?? null },
    scheduled_for: new Date(run.scheduled_for).toISOString(),
    late: run.late,
    manual: run.manual,
    attempt,
  }
}

async function finish(ctx: AppContext, run: LoadedRun, status: 'delivered' | 'failed', responseStatus: number | null, error: string | null) {
  await ctx.sql.begin(async tx => {
    await finishRun(tx, run.id, status, responseStatus, error)
    // a one-shot wake is done once its run got through
    if (status === 'delivered' && run.wake.schedule_type === 'at' && !run.manual) await disableWake(tx, run.wake_id)
    await recordChanges(tx, [
      {
        orgId: run.org_id,
        type: status === 'delivered' ? 'wake.run_delivered' : 'wake.run_failed',
        resource: { type: 'wake_run', id: run.id },
        data: {
          run_id: run.id,
          wake_id: run.wake_id,
          command: run.wake.command.name,
          scheduled_for: new Date(run.scheduled_for).toISOString(),
          late: run.late,
          response_status: responseStatus,
        },
      },
    ])
  })
  mailEvents(ctx).emitChange(run.org_id)
}

/** One attempt; throws to retry with the same run id. */
async function attempt(ctx: AppContext, run: LoadedRun, job: Job): Promise<{ status: number | null }> {
  const wake = run.wake
  const body = JSON.stringify(runBody(run, wake, job.attempts))
  if (wake.target_type === 'agent_connection') {
    if (!run.address) throw new Error('the agent connection is revoked')
    // the command is a change on the connection's own feed, written with the run's outcome
    await ctx.sql.begin(tx =>
      recordChanges(tx, [
        {
          orgId: run.org_id,
          id: `evt_${run.id.replaceAll('-', '')}`,
          type: 'wake.command',
          resource: { type: 'wake_run', id: run.id },
          addresses: [run.address!],
          data: JSON.parse(body),
        },
      ]),
    )
    mailEvents(ctx).emitChange(run.org_id)
    return { status: null }
  }
  const functionId = wake.target_type === 'function' ? wake.target_id : run.endpoint_kind === 'function' ? run.endpoint_function : null
  // signed as webhook deliveries are (the run id as webhook-id): a function verifies it with SERVICE_WEBHOOK_SECRET
  const signed = { ...signedHeaders(await cachedSigningSecrets(ctx, run.org_id), run.id, body), 'x-wake-run-id': run.id }
  if (functionId) {
    const headers: [string, string][] = [['content-type', 'application/json'], ['user-agent', 'agent-mail-wake/1'], ...Object.entries(signed)]
    // a guest request's body travels base64-encoded (sandbox/protocol.ts)
    const invocation = await invokeFunction(ctx, {
      orgId: run.org_id,
      functionId,
      request: { method: 'POST', url: `${ctx.config.PUBLIC_URL}/wake/${wake.id}`, headers, body: Buffer.from(body).toString('base64') },
    })
    if (!invocation) throw new Error('the function has no deployment to run')
    const status = invocation.result.response?.status ?? null
    if (invocation.result.outcome !== 'ok' || status === null || status < 200 || status > 299)
      throw new Error(`function answered ${status ?? invocation.result.outcome}`)
    return { status }
  }
  if (!run.url) throw new Error('the endpoint is deactivated')
  const target = await checkWebhookUrl(run.url, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK)
  const outcome = await postWebhook(target, body, signed, ctx.config.WEBHOOK_TIMEOUT_MS, run.id)
  if (!outcome.ok)
    throw Object.assign(new Error(outcome.status !== null ? `endpoint answered HTTP ${outcome.status}` : (outcome.message ?? 'no response')), {
      status: outcome.status,
    })
  return { status: outcome.status }
}

export const wakeRunJob: JobKind<{ run_id: string }> = {
  kind: WAKE_RUN_KIND,
  async handle(ctx, payload, job) {
    const run = await loadRun(ctx.sql, payload.run_id)
    if (run?.status !== 'pending') return
    await setRunAttempts(ctx.sql, run.id, job.attempts)
    try {
      const { status } = await attempt(ctx, run, job)
      await finish(ctx, run, 'delivered', status, null)
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      const status = (error as { status?: number | null }).status ?? null
      if (job.attempts >= job.max_attempts) await finish(ctx, run, 'failed', status, message)
      else await setRunError(ctx.sql, run.id, message, status)
      throw error
    }
  },
}
