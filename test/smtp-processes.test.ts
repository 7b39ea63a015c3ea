/**
 * The smtp role in several processes on one port (src/smtp-processes.ts), started by the
 * configuration alone. One of them is killed with SIGKILL while 20 clients deliver: every
 * message is stored (a client not told 250 sends again, as SMTP clients do), once, unless the
 * process died between its commit and its 250: the client then sends it again and it is stored
 * twice (nothing deduplicates by Message-ID; docs/operations.md). The killed process is started
 * again.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import net from 'node:net'
import { availableParallelism } from 'node:os'
import { loadConfig } from '../src/config'
import { createOrg, testApp, testSql } from './helpers/app'
import { testDatabase } from './helpers/database'
import { startDnsStub } from './helpers/dns-stub'
import { managedAddress } from './helpers/mail'
import { spawnService } from './helpers/service-process'
import { until } from './helpers/until'

const db = await testDatabase()
const onServer = db.kind === 'postgres'
const cleanup: (() => unknown)[] = []
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn()
})

/**
 * Delivers one message on a connection of its own; resolves true on 250 after the data, false
 * when the connection broke first (the caller sends it again).
 */
function deliver(port: number, to: string, subject: string): Promise<boolean> {
  return new Promise(resolve => {
    const socket = net.connect(port, '127.0.0.1')
    let buffer = ''
    let replies = 0
    const finish = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.on('error', () => finish(false))
    socket.on('close', () => finish(false))
    socket.on('data', chunk => {
      buffer += chunk.toString()
      let eol: number
      while ((eol = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, eol)
        buffer = buffer.slice(eol + 2)
        if (!/^\d{3} /.test(line)) continue
        replies++
        // 220, then EHLO MAIL RCPT DATA pipelined: 250 250 250 354, then the 250 of the message
        if (replies === 1) socket.write(`EHLO client.sender.example\r\nMAIL FROM:<sam@sender.example>\r\nRCPT TO:<${to}>\r\nDATA\r\n`)
        else if (replies === 5) socket.write(`Subject: ${subject}\r\nMessage-ID: <${subject}@sender.example>\r\n\r\nbody\r\n.\r\n`)
        else if (replies === 6) {
          socket.end('QUIT\r\n')
          return finish(line.startsWith('250'))
        }
        if (!/^[23]/.test(line)) return finish(false)
      }
    })
  })
}

describe('SMTP_PROCESSES', () => {
  test('unset, the smtp role runs in as many processes as there are cores (on PostgreSQL; one on the embedded database)', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x' }).smtpProcesses).toBe(availableParallelism())
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x', SMTP_PROCESSES: '3' }).smtpProcesses).toBe(3)
    expect(loadConfig({}).smtpProcesses).toBe(1)
  })

  test.skipIf(!onServer)(
    'one of two processes on the port is killed mid-load: every message stored, twice only if its client sent it again, the process started again',
    async () => {
      const dns = await startDnsStub()
      cleanup.push(() => dns.server.kill())
      const s = await spawnService({ ROLES: 'smtp', SMTP_PROCESSES: '2', SMTP_HOSTNAME: 'mx.test.local', DNS_SERVERS: `127.0.0.1:${dns.port}` })
      cleanup.push(() => s.proc.kill(9))
      const started = await s.waitForLog(l => l.msg === 'smtp processes started')
      expect(started.processes).toBe(2)
      const [childPid] = started.pids as number[]
      expect(s.logs.filter(l => l.msg === 'smtp process started')).toHaveLength(1)

      const { ctx } = await testApp()
      const org = await createOrg()
      const address = await managedAddress(ctx, org.orgId)
      const run = Date.now().toString(36)
      const SESSIONS = 20
      const PER_SESSION = 15
      let acknowledged = 0
      let broken = 0
      let killed = false
      // the messages whose client saw its connection break, and so sent them again
      const sentAgain = new Set<string>()
      await Promise.all(
        Array.from({ length: SESSIONS }, async (_, session) => {
          for (let i = 0; i < PER_SESSION; i++) {
            const subject = `m-${run}-${session}-${i}`
            while (!(await deliver(s.smtpPort!, address, subject))) {
              broken++
              sentAgain.add(subject)
            }
            acknowledged++
            if (!killed && acknowledged >= (SESSIONS * PER_SESSION) / 3) {
              killed = true
              process.kill(childPid!, 'SIGKILL')
            }
          }
        }),
      )
      expect(killed).toBe(true)
      expect(broken).toBeGreaterThan(0)
      const sql = await testSql()
      const rows = await sql<{ subject: string; n: number }[]>`
      select subject, count(*)::int as n from emails where org_id = ${org.orgId} group by subject`
      const expected = Array.from({ length: SESSIONS * PER_SESSION }, (_, k) => `m-${run}-${Math.floor(k / PER_SESSION)}-${k % PER_SESSION}`)
      expect(rows.map(r => r.subject).sort()).toEqual(expected.sort())
      // stored twice only when committed and then sent again because its 250 never arrived
      expect(rows.filter(r => r.n !== 1 && !(r.n === 2 && sentAgain.has(r.subject)))).toEqual([])
      // the killed process was serving sessions, and it is started again
      const restarted = await s.waitForLog(l => l.msg === 'smtp process exited; starting it again')
      expect(restarted.pid).toBe(childPid)
      await until(
        async () => s.logs.filter(l => l.msg === 'smtp process started').length,
        n => n === 2,
      )
      console.log(`${acknowledged} messages acknowledged, ${broken} attempts cut off by the kill and sent again`)
    },
    60_000,
  )

  test.skipIf(!onServer)(
    'the extra process stops when the process that started it is killed',
    async () => {
      const s = await spawnService({ ROLES: 'smtp', SMTP_PROCESSES: '2' })
      cleanup.push(() => s.proc.kill(9))
      const [childPid] = (await s.waitForLog(l => l.msg === 'smtp processes started')).pids as number[]
      // running, not gone or a zombie waiting to be reaped
      const alive = async () => {
        const stat = await Bun.file(`/proc/${childPid}/stat`)
          .text()
          .catch(() => '')
        return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
      }
      expect(await alive()).toBe(true)
      s.proc.kill(9)
      expect(await until(alive, a => !a)).toBe(false)
    },
    30_000,
  )
})
