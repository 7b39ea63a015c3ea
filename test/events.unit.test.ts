/** New-mail signals (src/events.ts): a waiter filtered to an address wakes for its own mail only. */
import { describe, expect, test } from 'bun:test'
import { MailEvents, mailSignal, pollMail } from '../src/events'

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

  describe('pollMail', () => {
    const poll = (events: MailEvents, reads: (n: number) => string[], opts: { ms?: number; signal?: AbortSignal; address?: string } = {}) => {
      let n = 0
      const result = pollMail(
        events,
        { orgId: ORG, address: opts.address, ms: opts.ms ?? 10_000, signal: opts.signal ?? new AbortController().signal },
        async () => reads(n++),
        r => r.length > 0,
      )
      return { result, reads: () => n }
    }

    test('one registration for the whole poll: a wake whose read finds nothing waits on, the next wake answers after one more read', async () => {
      const events = new MailEvents()
      let mail: string[] = []
      const p = poll(events, () => mail, { address: 'agent@agents.example' })
      await Bun.sleep(5)
      expect(p.reads()).toBe(1)
      expect(events.waiting).toBe(1)
      events.emit(ORG, ['agent@agents.example'])
      await Bun.sleep(5)
      expect(p.reads()).toBe(2)
      expect(events.waiting).toBe(1)
      mail = ['m1']
      events.emit(ORG, ['other@agents.example'])
      await Bun.sleep(5)
      expect(p.reads()).toBe(2)
      events.emit(ORG, ['agent@agents.example'])
      expect(await p.result).toEqual(['m1'])
      expect(p.reads()).toBe(3)
      expect(events.waiting).toBe(0)
    })

    test('a signal that comes during a read that finds nothing makes it read again at once', async () => {
      const events = new MailEvents()
      const p = poll(events, n => {
        // mail stored while the first read runs: its signal arrives before the poll parks
        if (n === 0) events.emit(ORG)
        return n === 0 ? [] : ['m1']
      })
      expect(await p.result).toEqual(['m1'])
      expect(p.reads()).toBe(2)
    })

    test('its time up or its client gone, it answers what it read last, without reading again, and leaves no waiter', async () => {
      const events = new MailEvents()
      const timed = poll(events, () => [], { ms: 20 })
      expect(await timed.result).toEqual([])
      expect(timed.reads()).toBe(1)
      const abort = new AbortController()
      const aborted = poll(events, () => [], { signal: abort.signal })
      await Bun.sleep(5)
      abort.abort()
      expect(await aborted.result).toEqual([])
      expect(aborted.reads()).toBe(1)
      expect(events.waiting).toBe(0)
    })

    test('a stopping process (endWaits) answers every poll after one more read, and a new one after its first', async () => {
      const events = new MailEvents()
      const parked = poll(events, () => [])
      await Bun.sleep(5)
      events.endWaits()
      expect(await parked.result).toEqual([])
      expect(parked.reads()).toBe(2)
      const late = poll(events, () => [])
      expect(await late.result).toEqual([])
      expect(late.reads()).toBe(1)
      expect(events.waiting).toBe(0)
    })
  })
})
