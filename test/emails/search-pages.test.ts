/**
 * Search pages across the newest messages and the index (src/mail/email-queries.ts): a walk
 * through every page of a word finds exactly the messages that have it, newest first, whether
 * they come from the newest messages, from the index or from both, and none of another
 * organization's with the same words; the total is exact up to its cap. On a server with RUM
 * the index is the ordered one (sql/0049), on PGlite emails_search_idx.
 */
import { beforeAll, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { seedMailbox } from '../helpers/mailbox-seed'
import { SEARCH_COUNT_CAP } from '../../src/mail/email-queries'

// more than the √(40·2,600) = 323 newest messages a search tests, so that rarer words continue from the index
const SIZE = 2_600
let t: TestApp
let org: TestOrg

beforeAll(async () => {
  t = await testApp()
  org = await createOrg()
  // another organization with the same words, stored first (older, so its matches are below the
  // newest messages of this one, where the index is asked): none of its messages may show
  const other = await createOrg()
  await seedMailbox(await testSql(), { orgId: other.orgId, address: 'other@agents.test.local', count: SIZE })
  await seedMailbox(await testSql(), { orgId: org.orgId, address: 'box@agents.test.local', count: SIZE })
}, 120_000)

async function walk(q: string, limit: number) {
  const ids: string[] = []
  const totals = new Set<number>()
  const short: number[] = []
  let cursor: string | null = null
  do {
    const res = await t.request('GET', `/v1/search?limit=${limit}&q=${encodeURIComponent(q)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
      key: org.key,
    })
    expect(res.status).toBe(200)
    ids.push(...res.body.data.map((e: { id: string }) => e.id))
    totals.add(res.body.meta.total)
    cursor = res.body.meta.cursor
    // a page with a next one is full: no slot went to a message the organization cannot see
    if (cursor && res.body.data.length < limit) short.push(res.body.data.length)
  } while (cursor)
  return { ids, totals: [...totals], short }
}

test('every page of a common, a middling and a rare word: exactly the matching messages, newest first', async () => {
  const sql = await testSql()
  // words by how many of the messages have them: most, some hundreds, a few (the oldest ones among them)
  const [common, middling, rare] = await Promise.all(
    (
      [
        [1500, SIZE],
        [100, 400],
        [1, 5],
      ] as [number, number][]
    ).map(async ([low, high]) => {
      const [row] = await sql<{ word: string; n: number }[]>`
        select word, ndoc as n from ts_stat(${`select search from emails where org_id = '${org.orgId}'`})
         where word ~ '^w[0-9]+$' and ndoc between ${low} and ${high} order by ndoc desc limit 1`
      return row!
    }),
  )
  for (const { word, n } of [common!, middling!, rare!]) {
    const truth = await sql<{ id: string }[]>`
      select id from emails where org_id = ${org.orgId} and search @@ plainto_tsquery('simple', ${word}) order by received_at desc, id desc`
    expect(truth).toHaveLength(n)
    const { ids, totals, short } = await walk(word, 100)
    expect({ word, ids }).toEqual({ word, ids: truth.map(r => r.id) })
    expect({ word, short }).toEqual({ word, short: [] })
    expect({ word, totals }).toEqual({ word, totals: [Math.min(n, SEARCH_COUNT_CAP)] })
  }
}, 120_000)
