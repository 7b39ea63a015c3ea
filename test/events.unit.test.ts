/** New-mail signals (src/events.ts): a waiter filtered to an address wakes for its own mail only. */
import { describe, expect, test } from 'bun:test'
import { MailEvents, mailSignal } from '../src/events'

const ORG = '0190f0f0-0000-7000-8000-000000000001'
const settled = async (p: Promise<boolean>) => Promise.race([p, Bun.sleep(20).then(() => 'waiting' as const)])

describe('MailEvents', () => {
  test('a waiter of an address wakes for mail of that address, not for another address of the organization', async () => {
    const events = new MailEvents()
    const mine = events.waitForMail(ORG, 10_000, undefined, 'Agent@Agents.Example')
    const any = events.waitForMail(ORG, 10_000)
    events.emit(ORG, ['other@agents.example'])
    expect(await settled(any)).toBe(true)
    expect(await settled(mine)).toBe('waiting')
    events.emit(ORG, ['other@agents.example', 'agent@agents.example'])
    expect(await settled(mine)).toBe(true)
    expect(events.waiting).toBe(0)
  })

  test('a signal that names no address (too many to name) wakes every waiter of the organization, and no other', async () => {
    const events = new MailEvents()
    const mine = events.waitForMail(ORG, 10_000, undefined, 'agent@agents.example')
    const elsewhere = events.waitForMail('0190f0f0-0000-7000-8000-000000000002', 10_000)
    events.emit(
      ORG,
      Array.from({ length: 100 }, (_, i) => `${'x'.repeat(80)}${i}@agents.example`),
    )
    expect(await settled(mine)).toBe(true)
    expect(await settled(elsewhere)).toBe('waiting')
  })

  test('mailSignal: the organization, then its lowercase addresses once each; the organization alone past the NOTIFY size', () => {
    expect(mailSignal(ORG, ['A@x.example', 'a@x.example', 'b@x.example'])).toBe(`${ORG} a@x.example b@x.example`)
    expect(
      mailSignal(
        ORG,
        Array.from({ length: 100 }, (_, i) => `${'x'.repeat(80)}${i}@agents.example`),
      ),
    ).toBe(ORG)
  })

  test('timeout and abort resolve false and leave no waiter behind', async () => {
    const events = new MailEvents()
    expect(await events.waitForMail(ORG, 1, undefined, 'a@x.example')).toBe(false)
    const abort = new AbortController()
    const waiting = events.waitForMail(ORG, 10_000, abort.signal)
    abort.abort()
    expect(await waiting).toBe(false)
    expect(events.waiting).toBe(0)
  })
})
