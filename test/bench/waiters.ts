/**
 * Waiters section of `make bench` (issue 19 item 5): what many waiting agents cost one service
 * process (src/index.ts, ROLES=api,smtp, SMTP_PROCESSES=1), held by a client process of its own
 * (waiters-client.ts):
 *
 * - 10,000 long-polls (`GET /v1/emails?wait=60&inbox_id=...`) over 1,000 inboxes, each on a
 *   connection of its own: the service's resident memory before and with them, per waiter; then
 *   one message to one inbox, and how many long-polls it answered (its inbox's 10: a long-poll
 *   filtered to an inbox wakes for that inbox's mail only);
 * - then, in a fresh service process, 10,000 idle SMTP sessions (EHLO said, nothing more):
 *   memory per session.
 *
 * The baseline of each is its process idle (its memory before). The service's open-file limit is
 * this machine's (ulimit -n); its connection budget is that less 256.
 */
import { rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { readFileSync } from 'node:fs'
import net from 'node:net'
import type { Sql } from '../../src/db/client'
import { createOrgCommand, setApiLimitCommand } from '../../src/admin/commands'
import { createManagedInbox } from '../../src/inboxes/service'
import { freePort, startService, stopAll, waitForSmtpGreeting } from './common'

const WAITERS = Number(process.env.BENCH_WAITERS ?? 10_000)
const INBOXES = Number(process.env.BENCH_WAITER_INBOXES ?? 1_000)
const SESSIONS = Number(process.env.BENCH_IDLE_SESSIONS ?? 10_000)
const MANAGED_DOMAIN = 'agents.bench.local'
const dir = import.meta.dir

const rssKb = (pid: number) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)![1])

/** The client process: one JSON line when its connections are open, one more per `report()`. */
function holder(argv: string[]) {
  const proc = Bun.spawn([process.execPath, `${dir}/waiters-client.ts`, ...argv], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const lines = (async function* () {
    let buffered = ''
    for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk
      let at: number
      while ((at = buffered.indexOf('\n')) >= 0) {
        yield JSON.parse(buffered.slice(0, at)) as Record<string, number>
        buffered = buffered.slice(at + 1)
      }
    }
  })()
  const next = async () => (await lines.next()).value as Record<string, number>
  return {
    next,
    report: async () => (proc.stdin.write('report\n'), proc.stdin.flush(), next()),
    exit: async () => (proc.stdin.write('exit\n'), proc.stdin.flush(), await proc.exited),
  }
}

/** One message to `to` over SMTP, waiting for its 250. */
async function deliver(port: number, to: string) {
  const socket = net.connect(port, '127.0.0.1')
  let text = ''
  socket.on('data', chunk => (text += chunk.toString()))
  const until = async (re: RegExp) => {
    for (let i = 0; i < 1000 && !re.test(text); i++) await Bun.sleep(10)
  }
  await until(/^220 /m)
  socket.write(`EHLO bench.example\r\nMAIL FROM:<sam@sender.bench.example>\r\nRCPT TO:<${to}>\r\nDATA\r\n`)
  await until(/^354 /m)
  text = ''
  socket.write('Subject: wake\r\n\r\nfor one inbox\r\n.\r\n')
  await until(/^\d{3} /m)
  socket.end()
  if (!text.startsWith('250')) throw new Error(`the message was not accepted: ${text}`)
}

export async function waitersBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'waiters bench' })
  await setApiLimitCommand(sql, org.org_id, '100000000')
  const inboxes = await sql.begin(async tx => {
    const rows = []
    for (let i = 0; i < INBOXES; i++) rows.push(await createManagedInbox(tx, org.org_id, MANAGED_DOMAIN))
    return rows
  })
  const inboxFile = `${tmpdir()}/agent-mail-waiters-${crypto.randomUUID()}.json`
  await Bun.write(inboxFile, JSON.stringify(inboxes.map(i => i.id)))

  const children: Bun.Subprocess[] = []
  try {
    /** A fresh service process for each phase, so each starts from the same idle memory. */
    const start = async () => {
      const [apiPort, smtpPort] = [await freePort(), await freePort()]
      const service = await startService(
        children,
        {
          DATABASE_URL: dbUrl,
          PORT: String(apiPort),
          SMTP_PORT: String(smtpPort),
          HOST: '127.0.0.1',
          ROLES: 'api,smtp',
          MANAGED_DOMAIN,
          SECRET_KEY: 'bench-secret-0123456789abcdef0123456789',
          SMTP_MAX_CONNECTIONS: String(SESSIONS + 100),
          DNS_SERVERS: '127.0.0.1:9',
          DNS_CACHE_SECONDS: '300',
          LOG_LEVEL: 'warn',
        },
        { profile: false },
      )
      await waitForSmtpGreeting(smtpPort)
      await Bun.sleep(1000)
      return { service, apiPort, smtpPort, idle: rssKb(service.pid) }
    }
    const { service, apiPort, smtpPort, idle } = await start()
    console.log(
      `\nwaiters: one service process (ROLES=api,smtp); ${WAITERS} long-polls (wait=60, filtered by inbox) over ${INBOXES} inboxes, then ${SESSIONS} idle SMTP sessions, ` +
        `each on a connection of its own from a client process (waiters-client.ts); open-file limit ${readFileSync('/proc/self/limits', 'utf8').match(/Max open files\s+(\d+)/)?.[1]}; load average ${loadavg()[0]!.toFixed(2)} before\n`,
    )

    const polls = holder(['http', String(apiPort), String(WAITERS), org.api_key, inboxFile])
    const opened = await polls.next()
    await Bun.sleep(3000)
    const withWaiters = rssKb(service.pid)
    const before = await polls.report()
    await deliver(smtpPort, inboxes[0]!.address)
    // its inbox's long-polls answer (up to 15 s on a loaded machine); any other answering would show here too
    const expected = Math.ceil(WAITERS / INBOXES)
    let after = await polls.report()
    for (let i = 0; i < 30 && after.answered! - before.answered! < expected; i++) {
      await Bun.sleep(500)
      after = await polls.report()
    }
    await Bun.sleep(1000)
    after = await polls.report()
    await polls.exit()
    await stopAll(children.splice(0))

    const second = await start()
    const base = second.idle
    const sessions = holder(['smtp', String(second.smtpPort), String(SESSIONS)])
    const held = await sessions.next()
    await Bun.sleep(2000)
    const withSessions = rssKb(second.service.pid)
    await sessions.exit()

    const perKb = (delta: number, n: number) => ((delta * 1024) / Math.max(1, n) / 1024).toFixed(1)
    console.log(`${'what'.padEnd(34)}${'held'.padStart(8)}${'failed'.padStart(8)}${'RSS MB'.padStart(10)}${'KB each'.padStart(10)}`)
    console.log(`${'service idle (baseline)'.padEnd(34)}${''.padStart(8)}${''.padStart(8)}${(idle / 1024).toFixed(0).padStart(10)}${''.padStart(10)}`)
    console.log(`${'a fresh one, idle (baseline)'.padEnd(34)}${''.padStart(8)}${''.padStart(8)}${(base / 1024).toFixed(0).padStart(10)}${''.padStart(10)}`)
    console.log(
      `${'long-polls waiting'.padEnd(34)}${String(opened.opened).padStart(8)}${String(opened.failed).padStart(8)}${(withWaiters / 1024).toFixed(0).padStart(10)}${perKb(withWaiters - idle, opened.opened!).padStart(10)}`,
    )
    console.log(
      `${'idle SMTP sessions'.padEnd(34)}${String(held.opened).padStart(8)}${String(held.failed).padStart(8)}${(withSessions / 1024).toFixed(0).padStart(10)}${perKb(withSessions - base, held.opened!).padStart(10)}`,
    )
    console.log(
      `\none message to one of ${INBOXES} inboxes answered ${after.answered! - before.answered!} long-polls (${after.with_mail! - before.with_mail!} with the message; ` +
        `its inbox has ${expected} waiters; ${before.answered} had answered before it, ${before.closed} closed); ` +
        `memory per waiter ${perKb(withWaiters - idle, opened.opened!)} KB, per idle SMTP session ${perKb(withSessions - base, held.opened!)} KB (RSS, the process as a whole)`,
    )
  } finally {
    await stopAll(children)
    await rm(inboxFile, { force: true })
  }
}
