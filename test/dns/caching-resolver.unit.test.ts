import { expect, test } from 'bun:test'
import { cachingResolver, memoryResolver, type RecordType, type Resolver } from '../../src/dns/resolver'

/** A resolver over in-memory records that counts the questions that reach it. */
function counted(records: Parameters<typeof memoryResolver>[0], fail?: (name: string) => Error | undefined) {
  const inner = memoryResolver(records)
  const asked: string[] = []
  const resolver: Resolver = async (name: string, rrtype: RecordType) => {
    asked.push(`${rrtype} ${name}`)
    const error = fail?.(name)
    if (error) throw error
    return inner(name, rrtype)
  }
  return { resolver, asked }
}

test('an answer is kept: the same question (in any letter case) is asked of DNS once', async () => {
  const { resolver, asked } = counted({ 'sender.example': { TXT: [['v=spf1 -all']] } })
  const cached = cachingResolver(resolver, 60_000)
  expect(await cached('sender.example', 'TXT')).toEqual([['v=spf1 -all']])
  expect(await cached('Sender.Example', 'TXT')).toEqual([['v=spf1 -all']])
  expect(asked).toEqual(['TXT sender.example'])
})

test('lookups in flight at once share one query', async () => {
  const { resolver, asked } = counted({ 'sender.example': { TXT: [['v=spf1 -all']] } })
  const cached = cachingResolver(resolver, 60_000)
  await Promise.all([cached('sender.example', 'TXT'), cached('sender.example', 'TXT'), cached('sender.example', 'TXT')])
  expect(asked).toHaveLength(1)
})

test('"no such record" is kept; a failure is not, so the next lookup asks again', async () => {
  let down = true
  const timeout = Object.assign(new Error('ETIMEOUT flaky.example'), { code: 'ETIMEOUT' })
  const { resolver, asked } = counted({ 'flaky.example': { TXT: [['ok']] } }, name => (name === 'flaky.example' && down ? timeout : undefined))
  const cached = cachingResolver(resolver, 60_000)
  for (let i = 0; i < 2; i++) await expect(cached('missing.example', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' })
  await expect(cached('flaky.example', 'TXT')).rejects.toMatchObject({ code: 'ETIMEOUT' })
  down = false
  expect(await cached('flaky.example', 'TXT')).toEqual([['ok']])
  expect(asked).toEqual(['TXT missing.example', 'TXT flaky.example', 'TXT flaky.example'])
})

test('callers get copies: changing an answer does not change the next one', async () => {
  const { resolver } = counted({ 'sender.example': { MX: [{ exchange: 'mx.sender.example', priority: 10 }] } })
  const cached = cachingResolver(resolver, 60_000)
  const first = await cached('sender.example', 'MX')
  first[0].exchange = 'evil.example'
  expect(await cached('sender.example', 'MX')).toEqual([{ exchange: 'mx.sender.example', priority: 10 }])
})

test('an answer older than the maximum age is asked for again', async () => {
  const { resolver, asked } = counted({ 'sender.example': { TXT: [['v=spf1 -all']] } })
  const cached = cachingResolver(resolver, 20)
  await cached('sender.example', 'TXT')
  await Bun.sleep(40)
  await cached('sender.example', 'TXT')
  expect(asked).toHaveLength(2)
})
