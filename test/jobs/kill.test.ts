/**
 * `kill -9` of a worker process in the middle of an attempt: its lease is not renewed, so another
 * worker frees the job and runs it again within the lease (here 2 seconds), exactly once more,
 * with the attempt counted and the same delivery id (webhook) or the same stored message (send).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createOrg, testApp, testSql } from '../helpers/app'
import { inboundHarness, managedAddress } from '../helpers/mail'
import { spawnService, type ServiceProcess } from '../helpers/service-process'
import { startRelayPeer } from '../mail/outbound/peers'
import { startWorker } from '../../src/jobs/worker'
import type { JobKind } from '../../src/jobs/kind'
import { deliverJob } from '../../src/webhooks/deliver.job'
import { executeJob } from '../../src/sending/execute'
import { relayOf } from '../../src/sending/relay'
import { testDatabase } from '../helpers/database'
import { until } from '../helpers/until'

const db = await testDatabase()
const LEASE = { JOB_LEASE_SECONDS: '2' }
const cleanup: (() => unknown)[] = []
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn()
})

/** A worker process with a short lease; killed at the end of the test if it still runs. */
async function workerProcess(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const service = await spawnService({ ROLES: 'worker', ...LEASE, ...env })
  cleanup.push(() => service.proc.kill(9))
  return service
}

/** A job kind that records the attempt number of each run before running it as usual. */
function recording<P>(kind: JobKind<P>, attempts: number[]): JobKind<P> {
  return { ...kind, handleMany: undefined, handle: (c, p, job) => (attempts.push(job.attempts), kind.handle(c, p, job)) }
}

describe.skipIf(db.kind !== 'postgres')('a worker killed with kill -9 mid-attempt', () => {
  test('during a slow webhook delivery: delivered by another worker within the lease, one more attempt, the same event id', async () => {
    // a receiver that holds the first request open (the worker dies waiting) and answers the next
    const seen: { eventId: string; attempt: number }[] = []
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        const body = (await req.json()) as { delivery: { attempt: number } }
        seen.push({ eventId: req.headers.get('webhook-id')!, attempt: body.delivery.attempt })
        return seen.length === 1 ? new Promise<Response>(() => {}) : new Response('ok')
      },
    })
    cleanup.push(() => receiver.stop(true))
    const h = await inboundHarness({ WEBHOOK_ALLOW_LOOPBACK: 'true' })
    cleanup.push(() => h.stop())
    const org = await createOrg()
    const address = await managedAddress(h.ctx, org.orgId)
    const sql = await testSql()
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${randomUUIDv7()}, ${org.orgId}, 'http', ${`http://127.0.0.1:${receiver.port}/hook`}, true, '{}')`

    const doomed = await workerProcess({ WEBHOOK_ALLOW_LOOPBACK: 'true' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'held', text: 'x' })
    await until(
      async () => seen.length,
      n => n === 1,
    )
    doomed.proc.kill(9)
    await doomed.exited
    const [delivery] = await sql<
      { id: string; attempt_count: number; status: string }[]
    >`select id, attempt_count, status from webhook_deliveries where org_id = ${org.orgId}`
    expect(delivery).toMatchObject({ attempt_count: 1, status: 'pending' })
    const [job] = await sql<{ locked_by: string; attempts: number }[]>`select locked_by, attempts from jobs where payload->>'delivery_id' = ${delivery!.id}`
    expect(job).toMatchObject({ locked_by: expect.stringMatching(/^worker_/), attempts: 1 })

    // the survivor: an ordinary worker with the same lease, started after the death
    const attempts: number[] = []
    const survivor = await startWorker(h.ctx, { pollMs: 100, leaseSeconds: 2, kinds: [recording(deliverJob, attempts)] })
    try {
      const done = await until(
        () => sql<{ attempt_count: number; status: string }[]>`select attempt_count, status from webhook_deliveries where id = ${delivery!.id}`,
        ([d]) => d!.status !== 'pending',
      )
      await survivor.drain()
      expect(done[0]).toMatchObject({ status: 'delivered', attempt_count: 2 })
      expect(attempts).toEqual([2])
      expect(seen).toEqual([seen[0]!, { eventId: seen[0]!.eventId, attempt: 2 }])
      expect(await sql`select 1 from jobs where payload->>'delivery_id' = ${delivery!.id}`).toHaveLength(0)
    } finally {
      await survivor.stop(1000)
    }
  }, 30_000)

  test('during an outbound send stalled by the relay: sent by another worker within the lease, one more attempt, the message built once', async () => {
    const stalled = await startRelayPeer({ data: 'hang' })
    const healthy = await startRelayPeer()
    cleanup.push(
      () => stalled.stop(),
      () => healthy.stop(),
    )
    const app = await testApp({ SMTP_RELAY_URL: healthy.url })
    cleanup.push(() => relayOf(app.ctx).close())
    const org = await createOrg()
    const from = await managedAddress(app.ctx, org.orgId)
    const sql = await testSql()

    const doomed = await workerProcess({ SMTP_RELAY_URL: stalled.url })
    // scheduled, so that no request runs it inline: the worker process executes it
    const at = new Date(Date.now() + 1000).toISOString()
    const res = await app.request('POST', '/v1/send-mail', {
      key: org.key,
      body: { from, to: 'alice@example.com', subject: 'stalled', body_text: 'x', scheduled_at: at },
    })
    expect(res.status).toBe(200)
    const sendId = res.body.data.id as string
    await until(
      async () => stalled.held,
      n => n === 1,
    )
    doomed.proc.kill(9)
    await doomed.exited
    const [built] = await sql<
      { status: string; last_message_id: string; last_email_id: string }[]
    >`select status, last_message_id, last_email_id from sends where id = ${sendId}`
    expect(built!.status).toBe('executing')
    expect(built!.last_message_id).toMatch(/^<.+>$/)
    const [job] = await sql<{ locked_by: string; attempts: number }[]>`select locked_by, attempts from jobs where payload->>'send_id' = ${sendId}`
    expect(job).toMatchObject({ locked_by: expect.stringMatching(/^worker_/), attempts: 1 })

    const attempts: number[] = []
    const survivor = await startWorker(app.ctx, { pollMs: 100, leaseSeconds: 2, kinds: [recording(executeJob, attempts)] })
    try {
      await until(
        async () => healthy.received.length,
        n => n === 1,
      )
      await survivor.drain()
      expect(attempts).toEqual([2])
      // the message the dead worker built and stored is the one relayed: same Message-ID, one stored copy
      expect(healthy.received[0]!.raw).toContain(`Message-ID: ${built!.last_message_id}`)
      const [after] = await sql<{ status: string; last_email_id: string }[]>`select status, last_email_id from sends where id = ${sendId}`
      expect(after).toMatchObject({ status: 'executed', last_email_id: built!.last_email_id })
      expect(await sql`select 1 from jobs where payload->>'send_id' = ${sendId}`).toHaveLength(0)
      expect(stalled.held).toBe(1)
    } finally {
      await survivor.stop(1000)
    }
  }, 30_000)
})
