import { describe, expect, test } from 'bun:test'
import { randomToken, safeEqual, ServerKeys } from '../src/crypto'

const keys = new ServerKeys('unit-test-secret-0123456789abcdef-0123')

describe('ServerKeys encryption', () => {
  test('round trip, including non-ASCII and empty text', () => {
    for (const text of ['whsec_abc', 'héllo ✉️ 世界', '']) expect(keys.decrypt(keys.encrypt(text))).toBe(text)
  })

  test('each encryption uses a fresh IV', () => {
    const a = keys.encrypt('same')
    const b = keys.encrypt('same')
    expect(a.equals(b)).toBe(false)
    expect(a.subarray(0, 12).equals(b.subarray(0, 12))).toBe(false)
  })

  test('a flipped bit anywhere is detected', () => {
    const sealed = keys.encrypt('secret value')
    for (const at of [0, 12, 27, 28, sealed.length - 1]) {
      const tampered = Buffer.from(sealed)
      tampered[at]! ^= 0x01
      expect(() => keys.decrypt(tampered)).toThrow()
    }
  })

  test('truncation is detected', () => {
    const sealed = keys.encrypt('secret value')
    expect(() => keys.decrypt(sealed.subarray(0, sealed.length - 1))).toThrow()
  })

  test('another server secret cannot decrypt', () => {
    const other = new ServerKeys('another-secret-0123456789abcdef-0123456')
    expect(() => other.decrypt(keys.encrypt('secret value'))).toThrow()
  })
})

describe('ServerKeys signatures', () => {
  test('verify accepts its own signature and refuses another purpose or data', () => {
    const sig = keys.sign('cursor:a', 'data')
    expect(keys.verify('cursor:a', 'data', sig)).toBe(true)
    expect(keys.verify('cursor:b', 'data', sig)).toBe(false)
    expect(keys.verify('cursor:a', 'datb', sig)).toBe(false)
    expect(keys.verify('cursor:a', 'data', sig.slice(0, -1))).toBe(false)
  })
})

describe('tokens', () => {
  test('randomToken has the prefix and 256 bits', () => {
    const t = randomToken('svc_')
    expect(t).toMatch(/^svc_[A-Za-z0-9_-]{43}$/)
    expect(randomToken('svc_')).not.toBe(t)
  })

  test('safeEqual compares content and length', () => {
    expect(safeEqual('abc', 'abc')).toBe(true)
    expect(safeEqual('abc', 'abd')).toBe(false)
    expect(safeEqual('abc', 'abcd')).toBe(false)
  })
})
