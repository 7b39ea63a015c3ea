import { describe, expect, test } from 'bun:test'
import { CR, LF } from '../../src/smtp/bytes'
import { DataReader } from '../../src/smtp/data-reader'

/** The straightforward byte-at-a-time state machine the indexOf-based DataReader must match exactly. */
class ReferenceReader {
  size = 0
  oversize = false
  bareLineBreak = false
  private state = 0
  private parts: Uint8Array[] = []

  constructor(private readonly maxBytes: number) {}

  feed(chunk: Uint8Array): number {
    const [LINE_START, MID_LINE, AFTER_CR, AFTER_DOT, AFTER_DOT_CR] = [0, 1, 2, 3, 4]
    const out = new Uint8Array(chunk.length + 1)
    let n = 0
    let state = this.state
    let end = -1
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!
      if (state === AFTER_CR) {
        if (b === LF) {
          out[n++] = CR
          out[n++] = LF
          state = LINE_START
          continue
        }
        this.bareLineBreak = true
        out[n++] = CR
        state = MID_LINE
      } else if (state === LINE_START) {
        if (b === 46) {
          state = AFTER_DOT
          continue
        }
        state = MID_LINE
      } else if (state === AFTER_DOT) {
        if (b === CR) {
          state = AFTER_DOT_CR
          continue
        }
        state = MID_LINE
      } else if (state === AFTER_DOT_CR) {
        if (b === LF) {
          end = i + 1
          state = LINE_START
          break
        }
        this.bareLineBreak = true
        out[n++] = CR
        state = MID_LINE
      }
      if (b === CR) {
        state = AFTER_CR
      } else {
        if (b === LF) this.bareLineBreak = true
        out[n++] = b
      }
    }
    this.state = state
    this.size += n
    if (!this.oversize && this.size > this.maxBytes) {
      this.oversize = true
      this.parts = []
    }
    if (!this.oversize && n > 0) this.parts.push(out.subarray(0, n))
    return end
  }

  chunks(): Uint8Array[] {
    return this.parts
  }
}

const join = (parts: Uint8Array[]) => Array.from(Buffer.concat(parts)).join(',')

/** Deterministic PRNG so a failure can be reproduced. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x80000000
  }
}

describe('DataReader', () => {
  test('matches the byte-at-a-time reference on random input split at random points', () => {
    const random = rng(42)
    // Mostly the bytes that matter, so markers, stuffing and bare line breaks are frequent.
    const alphabet = [CR, LF, 46, 46, 97, 98, 0, 255, CR, LF]
    for (let round = 0; round < 20_000; round++) {
      const length = Math.floor(random() * 40)
      const input = Uint8Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]!)
      const marker = Uint8Array.of(CR, LF, 46, CR, LF)
      if (length >= marker.length && random() < 0.3) input.set(marker, Math.floor(random() * (length - marker.length + 1)))
      const max = Math.floor(random() * 30)
      const ours = new DataReader(max)
      const ref = new ReferenceReader(max)
      let at = 0
      while (at < input.length) {
        const next = Math.min(input.length, at + 1 + Math.floor(random() * 8))
        const piece = input.subarray(at, next)
        const context = `round ${round}: [${Array.from(input)}] fed [${at}, ${next})`
        const used = ours.feed(piece)
        expect(used, context).toBe(ref.feed(piece))
        expect([ours.size, ours.oversize, ours.bareLineBreak], context).toEqual([ref.size, ref.oversize, ref.bareLineBreak])
        expect(join(ours.chunks()), context).toBe(join(ref.chunks()))
        if (used >= 0) break
        at = next
      }
    }
  })

  test('a 10 KB message in one chunk: unstuffed, measured, ended after the marker', () => {
    const lines = Array.from({ length: 120 }, (_, i) => (i % 10 === 5 ? `..dot line ${i}` : `line ${i} ${'x'.repeat(70)}`))
    const wire = new TextEncoder().encode(lines.join('\r\n') + '\r\n.\r\nQUIT\r\n')
    const r = new DataReader(1_000_000)
    const used = r.feed(wire)
    const expected = lines.map(l => (l.startsWith('..') ? l.slice(1) : l)).join('\r\n') + '\r\n'
    expect(used).toBe(wire.length - 'QUIT\r\n'.length)
    expect(new TextDecoder().decode(Buffer.concat(r.chunks()))).toBe(expected)
    expect(r.size).toBe(expected.length)
    expect(r.bareLineBreak).toBe(false)
    // One view per dot-stuffed line removed, plus one: the runs are not copied byte by byte.
    expect(r.chunks().length).toBe(13)
  })

  test('oversize: counting goes on, nothing is kept, the marker is still found', () => {
    const r = new DataReader(10)
    expect(r.feed(new TextEncoder().encode('0123456789\r\n'))).toBe(-1)
    expect(r.oversize).toBe(true)
    expect(r.feed(new TextEncoder().encode('more\r\n.\r\nNOOP\r\n'))).toBe(9)
    expect(r.size).toBe(18)
    expect(r.chunks()).toEqual([])
  })
})
