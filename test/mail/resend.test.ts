/**
 * A message sent again after its 250 was lost: a client that did not read our 250 (its connection
 * dropped after the commit) sends the same message again, perhaps to another of our processes. The
 * second copy is answered 250 and stored no second time; a second message with a new Message-ID, or
 * the same one to other recipients, is stored as usual.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createOrg, testApp, testSql } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { startDnsStub } from '../helpers/dns-stub'
import { managedAddress } from '../helpers/mail'
import { spawnService, type ServiceProcess } from '../helpers/service-process'
import { RawClient } from '../helpers/smtp-client'

const onServer = (await testDatabase()).kind === 'postgres'
const cleanup: (() => unknown)[] = []
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn()
})

/** One SMTP transaction on `port`; the reply to the end of DATA. */
async function send(port: number, to: string[], message: string, trace = '') {
  const c = await RawClient.connect(port)
  await c.read()
  c.write(`EHLO client.sender.example\r\nMAIL FROM:<sam@sender.example>\r\n${to.map(t => `RCPT TO:<${t}>\r\n`).join('')}DATA\r\n`)
  expect((await c.readMany(3 + to.length)).map(r => r.slice(0, 3))).toEqual(['250', '250', ...to.map(() => '250'), '354'])
  const reply = await c.command(`${trace}${message}\r\n.`)
  c.end()
  return reply.slice(0, 3)
}

describe.skipIf(!onServer)('a message sent again after a lost 250', () => {
  test('sent again to another process, with a new trace header: 250, one copy, one webhook delivery', async () => {
    const dns = await startDnsStub()
    cleanup.push(() => dns.server.kill())
    const env = { SMTP_HOSTNAME: 'mx.test.local', DNS_SERVERS: `127.0.0.1:${dns.port}`, ROLES: 'smtp' }
    const [a, b] = (await Promise.all([spawnService(env), spawnService(env)])) as [ServiceProcess, ServiceProcess]
    cleanup.push(
      () => a.proc.kill(9),
      () => b.proc.kill(9),
    )
    const sql = await testSql()
    const { ctx } = await testApp(env)
    const org = await createOrg()
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${randomUUIDv7()}, ${org.orgId}, 'http', 'http://127.0.0.1:9/hook', true, '{}')`
    const address = await managedAddress(ctx, org.orgId)
    const other = await managedAddress(ctx, org.orgId)
    const message = (id: string) => `Message-ID: <${id}@sender.example>\r\nSubject: the report\r\n\r\nHere it is.`

    expect(await send(a.smtpPort!, [address], message('one'), 'Received: from a by b; attempt 1\r\n')).toBe('250')
    expect(await send(b.smtpPort!, [address], message('one'), 'Received: from a by b; attempt 2\r\n')).toBe('250')
    // and at once, to both processes
    const twice = await Promise.all([a, b].map(s => send(s.smtpPort!, [address], message('two'))))
    expect(twice).toEqual(['250', '250'])
    // a new message, and the same message to another recipient, are stored
    expect(await send(a.smtpPort!, [address], message('three'))).toBe('250')
    expect(await send(a.smtpPort!, [other], message('one'))).toBe('250')

    const stored = await sql<{ message_id: string; rcpt: string }[]>`
      select message_id, rcpt_to[1] as rcpt from emails where org_id = ${org.orgId} order by message_id, rcpt`
    expect(stored.map(e => `${e.message_id} ${e.rcpt === address ? 'first' : 'other'}`).sort()).toEqual(
      ['<one@sender.example> first', '<one@sender.example> other', '<three@sender.example> first', '<two@sender.example> first'].sort(),
    )
    const [deliveries] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where org_id = ${org.orgId}`
    expect(deliveries!.n).toBe(4)
    expect(a.logs.concat(b.logs).filter(l => l.msg === 'inbound message' && l.resent)).toHaveLength(2)
  }, 60_000)
})
