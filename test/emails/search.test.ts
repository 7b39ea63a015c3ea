/** Full-text search of stored mail. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql } from '../helpers/app'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { testDatabase } from '../helpers/database'

const embedded = (await testDatabase()).kind === 'pglite'

let h: InboundHarness

beforeAll(async () => {
  h = await inboundHarness()
})
afterAll(() => h.stop())

describe('search', () => {
  test('finds by subject, sender and text; escapes wildcards', async () => {
    const gail = await createOrg()
    const address = await managedAddress(h.ctx, gail.orgId)
    await h.transport.sendMail({ from: 'Quinn <quinn@finder.example>', to: address, subject: 'Invoice 100%', text: 'the walrus sleeps' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Other', text: 'nothing' })
    const q = async (term: string) =>
      (await h.request('GET', `/v1/search?q=${encodeURIComponent(term)}`, { key: gail.key })).body.data.map((e: { subject: string }) => e.subject)
    expect(await q('invoice')).toEqual(['Invoice 100%'])
    expect(await q('quinn')).toEqual(['Invoice 100%'])
    expect(await q('walrus')).toEqual(['Invoice 100%'])
    expect(await q('100%')).toEqual(['Invoice 100%'])
    expect(await q('_')).toEqual([])
  })

  // Holding a table lock in one transaction while searching in another needs two connections;
  // the embedded fallback database has one.
  test.skipIf(embedded)('a search past its time budget is 504 search_timeout', async () => {
    const sql = await testSql()
    const henry = await createOrg()
    // Hold a lock the search must wait for, so its statement_timeout fires.
    let release!: () => void
    const held = new Promise<void>(r => (release = r))
    let locked!: () => void
    const isLocked = new Promise<void>(r => (locked = r))
    const tx = sql.begin(async t => {
      await t`lock table emails in access exclusive mode`
      locked()
      await held
    })
    await isLocked
    const { searchEmails } = await import('../../src/mail/email-queries')
    const err = await searchEmails(sql, henry.orgId, 'x', { limit: 10, after: null }, 200).catch((e: { code: string; status: number }) => e)
    release()
    await tx
    expect(err).toMatchObject({ code: 'search_timeout', status: 504 })
  })
})
