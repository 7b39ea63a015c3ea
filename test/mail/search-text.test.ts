/**
 * The search tokenizer (src/mail/search-text.ts): the words it finds, and its tsvector and
 * tsquery literals as the database reads them. The match checks run in the database, so they
 * hold for the operators PostgreSQL gives the literals, not for a model of them.
 */
import { describe, expect, test } from 'bun:test'
import { searchQuery, searchVector, words } from '../../src/mail/search-text'
import { testSql } from '../helpers/app'

const sql = await testSql()

const ORG = '0190a000-0000-7000-8000-000000000001'
const message = {
  orgId: ORG,
  subject: 'Re: Invoice 100% overdue',
  fromName: "Quinn O'Brien",
  fromAddress: 'Quinn.OBrien@Finder.example',
  text: 'The walrus sleeps on the ice.\r\nNaïve Ünïcode, 日本語 and an e-mail to bob@x.example\r\nbase64: ' + 'A'.repeat(150),
}

async function matches(q: string, m = message): Promise<boolean> {
  const literal = searchQuery(q)
  if (literal === null) return false
  const [row] = await sql<{ hit: boolean }[]>`select ${searchVector(m)}::tsvector @@ ${literal}::tsquery as hit`
  return row!.hit
}

describe('words', () => {
  test('runs of letters and digits, lowercased, in any script; long runs skipped', () => {
    expect(words("It's Naïve 日本語, e-mail 3.14 snake_case")).toEqual(['it', 's', 'naïve', '日本語', 'e', 'mail', '3', '14', 'snake', 'case'])
    expect(words('x'.repeat(101) + ' kept')).toEqual(['kept'])
    expect(words('%_!')).toEqual([])
  })
})

describe('the literals in the database', () => {
  test('the vector parses, with each word once and its positions', async () => {
    const [row] = await sql<
      { v: string }[]
    >`select ${searchVector({ orgId: ORG, subject: 'a b a', fromName: null, fromAddress: 'x@y.z', text: "it's" })}::tsvector::text as v`
    expect(row!.v).toBe(`'a':1,3 'b':2 'it':7 'org=${ORG}' 's':8 'x':4 'x@y.z':4 'y':5 'z':6`)
  })

  test("a received message's new content comes after the sender with weight A; the body follows unweighted", async () => {
    const [row] = await sql<{ v: string; a: boolean; quoted: boolean }[]>`
      select v::text as v, v @@ 'yes:A'::tsquery as a, v @@ 'lunch:A'::tsquery as quoted
        from (select ${searchVector({ orgId: ORG, subject: 's', fromName: null, fromAddress: null, text: 'Yes\n> lunch?', newText: 'Yes' })}::tsvector as v) x`
    expect(row!.v).toBe(`'lunch':4 'org=${ORG}' 's':1 'yes':2A,3`)
    expect(row!.a).toBe(true)
    expect(row!.quoted).toBe(false)
  })

  test('words, case, scripts and quotes in names match', async () => {
    for (const q of ['walrus', 'WALRUS', 'invoice', '100%', 'naïve', 'ÜNÏCODE', '日本語', "o'brien", 'quinn']) expect(await matches(q)).toBe(true)
    expect(await matches('penguin')).toBe(false)
  })

  test('the sender matches whole and by its words; an address in the text by its words', async () => {
    expect(await matches('quinn.obrien@finder.example')).toBe(true)
    expect(await matches('finder.example')).toBe(true)
    expect(await matches('bob@x.example')).toBe(true)
    expect(await matches('alice@x.example')).toBe(false)
  })

  test('web search syntax: all words, "a phrase", or, -word', async () => {
    expect(await matches('walrus ice')).toBe(true)
    expect(await matches('walrus penguin')).toBe(false)
    expect(await matches('"walrus sleeps"')).toBe(true)
    expect(await matches('"sleeps walrus"')).toBe(false)
    expect(await matches('e-mail')).toBe(true)
    expect(await matches('penguin or walrus')).toBe(true)
    expect(await matches('walrus -penguin')).toBe(true)
    expect(await matches('walrus -ice')).toBe(false)
    expect(await matches('-"walrus sleeps" invoice')).toBe(false)
  })

  test('a search with no words finds nothing; quotes and backslashes cannot break out of a literal', async () => {
    for (const q of ['_', '%', '""', 'or', '-']) expect(searchQuery(q)).toBeNull()
    for (const q of ["a'b", 'a\\b', "'); drop table emails; --", "x'@y.z"]) expect(typeof (await matches(q))).toBe('boolean')
  })

  test('a huge body is indexed up to its first 64 KB, with no word cut in two', async () => {
    const text = Array.from({ length: 20_000 }, (_, i) => `w${String(i % 500).padStart(3, '0')}`).join(' ')
    const [row] = await sql<
      { n: number }[]
    >`select length(${searchVector({ orgId: ORG, subject: null, fromName: null, fromAddress: null, text })}::tsvector) as n`
    // its 500 words, and the organization's lexeme
    expect(row!.n).toBe(501)
  })
})
