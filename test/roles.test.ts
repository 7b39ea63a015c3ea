/**
 * SIGTERM to a real service process. Every role stops taking work at once, and what is in flight
 * shares one grace period (SHUTDOWN_GRACE_MS): an HTTP request in flight is answered; the SMTP
 * listener refuses new connections, says 421 to an idle session at once and to a session
 * receiving a message right after that message is stored; the worker claims nothing more. A job
 * still running when the grace ends is handed back without counting the attempt, and another
 * worker, woken by NOTIFY, takes it at once.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { SMTPServer } from 'smtp-server'
import { randomUUIDv7 } from 'bun'
import { createOrg, testApp, testSql, type TestOrg } from './helpers/app'
import { testDatabase } from './helpers/database'
import { startDnsStub } from './helpers/dns-stub'
import { inboundHarness, managedAddress } from './helpers/mail'
import { spawnService } from './helpers/service-process'
import { RawClient } from './helpers/smtp-client'
import { startRelayPeer } from './mail/outbound/peers'
import { startWorker } from '../src/jobs/worker'
import type { JobKind } from '../src/jobs/kind'
import { deliverJob } from '../src/webhooks/deliver.job'
import { until } from './helpers/until'

const db = await testDatabase()
const onServer = db.kind === 'postgres'
const cleanup: (() => unknown)[] = []
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn()
})

// The process looks up the SPF of the test senders: a loopback DNS answers NXDOMAIN at once.
const dns = onServer ? await startDnsStub() : undefined
cleanup.push(() => dns?.server.kill())
const ENV = { HOST: '127.0.0.1', SMTP_HOSTNAME: 'mx.test.local', DNS_SERVERS: `127.0.0.1:${dns?.port}`, WEBHOOK_ALLOW_LOOPBACK: 'true' }

/** A receiver that holds the first webhook open until `release()`, and answers the others at once. */
function holdingReceiver() {
  const seen: { eventId: string; attempt: number; subject: string }[] = []
  let release!: () => void
  const held = new Promise<Response>(resolve => (release = () => resolve(new Response('ok'))))
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as { delivery: { attempt: number }; email: { headers: { subject: string } } }
      seen.push({ eventId: req.headers.get('webhook-id')!, attempt: body.delivery.attempt, subject: body.email.headers.subject })
      return seen.length === 1 ? held : new Response('ok')
    },
  })
  cleanup.push(() => server.stop(true))
  return { seen, release, url: `http://127.0.0.1:${server.port}/hook` }
}

/** An organization with a managed inbox and a webhook to `url`. */
async function inbox(url: string): Promise<{ org: TestOrg; address: string }> {
  const sql = await testSql()
  const { ctx } = await testApp(ENV)
  const org = await createOrg()
  await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${randomUUIDv7()}, ${org.orgId}, 'http', ${url}, true, '{}')`
  return { org, address: await managedAddress(ctx, org.orgId) }
}

async function service(env: Record<string, string>) {
  const s = await spawnService({ ...ENV, ...env })
  cleanup.push(() => s.proc.kill(9))
  return s
}

/** Sends one message to `to` through the SMTP listener on `port`. */
async function sendMail(port: number, to: string, subject: string) {
  const c = await RawClient.connect(port)
  await c.read()
  c.write(`EHLO client.sender.example\r\nMAIL FROM:<sam@sender.example>\r\nRCPT TO:<${to}>\r\nDATA\r\n`)
  expect((await c.readMany(4)).map(r => r.slice(0, 3))).toEqual(['250', '250', '250', '354'])
  expect(await c.command(`Subject: ${subject}\r\n\r\nx\r\n.`)).toStartWith('250')
  c.end()
}

describe.skipIf(!onServer)('SIGTERM', () => {
  test('all roles: a request in flight is answered; SMTP accepts no one and says 421 at once to an idle session, after its message to a busy one; the worker claims nothing more', async () => {
    const receiver = holdingReceiver()
    const [a, b] = [await inbox(receiver.url), await inbox(receiver.url)]
    const sql = await testSql()
    // a long grace: the test passes only if each role stops taking work at once, not after the others drained
    const s = await service({ SHUTDOWN_GRACE_MS: '60000' })
    // a delivery the worker is making when the signal comes
    await sendMail(s.smtpPort!, a.address, 'held')
    await until(
      async () => receiver.seen.length,
      n => n === 1,
    )
    // an idle session, and one in the middle of a message
    const idle = await RawClient.connect(s.smtpPort!)
    expect(await idle.read()).toStartWith('220 ')
    expect(await idle.command('EHLO client.sender.example')).toStartWith('250')
    const busy = await RawClient.connect(s.smtpPort!)
    await busy.read()
    busy.write(`EHLO client.sender.example\r\nMAIL FROM:<sam@sender.example>\r\nRCPT TO:<${b.address}>\r\nDATA\r\n`)
    expect((await busy.readMany(4)).map(r => r.slice(0, 3))).toEqual(['250', '250', '250', '354'])
    busy.write('Subject: during shutdown\r\n\r\nfirst half\r\n')
    // a long-poll waiting for mail (in the server once a later request on another connection was answered)
    const api = `http://127.0.0.1:${s.apiPort}`
    const longPoll = fetch(`${api}/v1/emails?wait=30`, { headers: { authorization: `Bearer ${b.org.key}` } })
    expect((await fetch(`${api}/v1/health`)).status).toBe(200)

    s.proc.kill('SIGTERM')
    expect(await idle.read()).toBe('421 4.3.2 mx.test.local shutting down')
    await idle.closed
    await expect(RawClient.connect(s.smtpPort!)).rejects.toThrow()
    // the message being received is finished and stored; then the session is told 421
    busy.write('second half\r\n.\r\n')
    expect(await busy.read()).toStartWith('250')
    expect(await busy.read()).toBe('421 4.3.2 mx.test.local shutting down')
    // that mail answers the long-poll in flight
    const res = await longPoll
    expect(res.status).toBe(200)
    expect(((await res.json()) as { data: { subject: string }[] }).data.map(e => e.subject)).toEqual(['during shutdown'])
    // the delivery in flight finishes within the grace, and the process exits
    receiver.release()
    expect(await s.exited).toBe(0)

    // the stopping worker did not claim the delivery of the mail stored during the shutdown
    const rows = await sql<{ subject: string; status: string; attempts: number | null }[]>`
      select e.subject, d.status, j.attempts
        from webhook_deliveries d join emails e on e.id = d.email_id left join jobs j on j.payload->>'delivery_id' = d.id::text
       where d.org_id in ${sql([a.org.orgId, b.org.orgId])} order by e.subject`
    expect([...rows]).toEqual([
      { subject: 'during shutdown', status: 'pending', attempts: 0 },
      { subject: 'held', status: 'delivered', attempts: null },
    ])
    expect(receiver.seen).toHaveLength(1)
  }, 30_000)

  test('a job still running when the grace ends is handed back, its attempt not counted, and another worker takes it at once', async () => {
    const receiver = holdingReceiver()
    const { org, address } = await inbox(receiver.url)
    const s = await service({ ROLES: 'worker', SHUTDOWN_GRACE_MS: '1000' })
    const harness = await inboundHarness()
    cleanup.push(() => harness.stop())
    await sendMail(harness.smtpPort, address, 'held')
    await until(
      async () => receiver.seen.length,
      n => n === 1,
    )
    // A worker that claims only when woken: it polls once a minute, longer than this test may take.
    const { ctx } = await testApp(ENV)
    const attempts: number[] = []
    const recording: JobKind = { ...deliverJob, handleMany: undefined, handle: (c, p, job) => (attempts.push(job.attempts), deliverJob.handle(c, p, job)) }
    const other = await startWorker(ctx, { listen: true, pollMs: 60_000, kinds: [recording] })
    try {
      await other.drain()
      s.proc.kill('SIGTERM')
      expect(await s.exited).toBe(0)
      await until(
        async () => receiver.seen.length,
        n => n === 2,
      )
      await other.drain()
    } finally {
      await other.stop(1000)
    }
    // the same event; the receiver may have seen the cut-off attempt, so the delivery counts it,
    // but the job's attempts (its retry budget) do not
    expect(receiver.seen.map(r => [r.eventId, r.attempt])).toEqual([
      [receiver.seen[0]!.eventId, 1],
      [receiver.seen[0]!.eventId, 2],
    ])
    expect(attempts).toEqual([1])
    const sql = await testSql()
    expect(await sql`select status from webhook_deliveries where org_id = ${org.orgId}`).toEqual([{ status: 'delivered' }] as never)
  }, 30_000)

  test('ROLES=api: a long-poll open at SIGTERM is answered with what it has before the grace ends, not cut off, and the process exits', async () => {
    const org = await createOrg()
    const s = await service({ ROLES: 'api', SHUTDOWN_GRACE_MS: '2500' })
    const api = `http://127.0.0.1:${s.apiPort}`
    const longPoll = fetch(`${api}/v1/emails?wait=30`, { headers: { authorization: `Bearer ${org.key}` } })
    const changes = fetch(`${api}/v1/changes?wait=30`, { headers: { authorization: `Bearer ${org.key}` } })
    // both wait in the server once a later request on another connection was answered
    expect((await fetch(`${api}/v1/health`)).status).toBe(200)
    s.proc.kill('SIGTERM')
    const [mail, feed] = await Promise.all([longPoll, changes])
    expect(mail.status).toBe(200)
    expect(((await mail.json()) as { data: unknown[] }).data).toEqual([])
    expect(feed.status).toBe(200)
    expect(((await feed.json()) as { data: unknown[] }).data).toEqual([])
    expect(await s.exited).toBe(0)
  }, 30_000)

  test('ROLES=api: a send cut off at the end of the grace hands its job back for a worker, attempt not counted', async () => {
    const stalled = await startRelayPeer({ data: 'hang' })
    cleanup.push(() => stalled.stop())
    const org = await createOrg()
    const { ctx } = await testApp(ENV)
    const from = await managedAddress(ctx, org.orgId)
    const s = await service({ ROLES: 'api', SHUTDOWN_GRACE_MS: '500', SMTP_RELAY_URL: stalled.url })
    const sending = fetch(`http://127.0.0.1:${s.apiPort}/v1/send-mail`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from, to: 'alice@example.com', subject: 'cut off', body_text: 'x' }),
    }).catch(() => 'cut off')
    await until(
      async () => stalled.held,
      n => n === 1,
    )
    s.proc.kill('SIGTERM')
    expect(await s.exited).toBe(0)
    await sending
    const sql = await testSql()
    const [job] = await sql<{ attempts: number; locked_by: string | null }[]>`
      select j.attempts, j.locked_by from jobs j join sends x on j.payload->>'send_id' = x.id::text where x.org_id = ${org.orgId}`
    expect(job).toEqual({ attempts: 0, locked_by: null })
  }, 30_000)

  test('ROLES=api: a send answered before its relay (Prefer: respond-async) is relayed within the grace before the process exits', async () => {
    // a relay that takes its time over the final dot
    const received: string[] = []
    const slow = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      disableReverseLookup: true,
      logger: false,
      onData(stream, session, callback) {
        stream.on('data', () => {})
        stream.on('end', () => setTimeout(() => (received.push(session.envelope.rcptTo[0]!.address), callback(null)), 800))
      },
    })
    await new Promise<void>(resolve => slow.listen(0, '127.0.0.1', resolve))
    cleanup.push(() => new Promise<void>(resolve => slow.close(() => resolve())))
    const org = await createOrg()
    const { ctx } = await testApp(ENV)
    const from = await managedAddress(ctx, org.orgId)
    const s = await service({
      ROLES: 'api',
      SHUTDOWN_GRACE_MS: '10000',
      SMTP_RELAY_URL: `smtp://127.0.0.1:${(slow.server.address() as { port: number }).port}`,
    })
    const res = await fetch(`http://127.0.0.1:${s.apiPort}/v1/send-mail`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', prefer: 'respond-async' },
      body: JSON.stringify({ from, to: 'alice@example.com', subject: 'answered first', body_text: 'x' }),
    })
    expect(res.status).toBe(202)
    const { data } = (await res.json()) as { data: { id: string } }
    s.proc.kill('SIGTERM')
    expect(await s.exited).toBe(0)
    expect(received).toEqual(['alice@example.com'])
    const sql = await testSql()
    const [send] = await sql<{ status: string }[]>`select status from sends where id = ${data.id}`
    expect(send!.status).toBe('queued')
    expect(await sql`select 1 from jobs where payload->>'send_id' = ${data.id}`).toHaveLength(0)
  }, 30_000)
})
