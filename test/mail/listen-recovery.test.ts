/**
 * New-mail signals survive a lost LISTEN connection (src/db/listener.ts, src/events.ts):
 * a waiter whose signal was sent while the connection was down is woken when it listens again,
 * and signals after that arrive, however long the database stayed unreachable. The outage is a
 * TCP proxy in front of the test database (test/helpers/tcp-proxy.ts).
 */
import { afterAll, expect, test } from 'bun:test'
import { EMAILS_CHANNEL, MailEvents } from '../../src/events'
import { testDatabase } from '../helpers/database'
import { proxiedDatabase } from '../helpers/tcp-proxy'

const db = await testDatabase()
const direct = db.sql
const { proxy, sql: proxied } = proxiedDatabase(db.url, 1)
const events = new MailEvents()

afterAll(async () => {
  await events.close()
  proxy.cut()
  await proxied.end({ timeout: 1 })
})

const notify = (orgId: string) => direct`select pg_notify(${EMAILS_CHANNEL}, ${orgId})`

test.skipIf(db.kind !== 'postgres')(
  'a wake-up lost while LISTEN was cut off is made up for, and signals flow again after',
  async () => {
    await events.listen(proxied)
    const orgId = crypto.randomUUID()

    const before = events.waitForMail(orgId, 10_000)
    await notify(orgId)
    expect(await before).toBe(true)

    // cut off for longer than the first attempt to listen again
    const during = events.waitForMail(orgId, 20_000)
    proxy.cut()
    await notify(orgId)
    await Bun.sleep(1_500)
    proxy.open()
    expect(await during).toBe(true)

    const after = events.waitForMail(orgId, 10_000)
    await Bun.sleep(100)
    await notify(orgId)
    expect(await after).toBe(true)
  },
  30_000,
)
