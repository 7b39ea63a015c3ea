/**
 * Secrets and tokens: random credentials, hashes for lookup, HMACs keyed by the server secret,
 * and authenticated encryption for secrets the service must be able to read back.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import type { Config } from './config'

/** `prefix` + 32 random bytes in base64url: 256 bits, so a plain SHA-256 is a safe lookup hash. */
export function randomToken(prefix: string, bytes = 32): string {
  return prefix + randomBytes(bytes).toString('base64url')
}

export function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

export function safeEqual(a: Buffer | string, b: Buffer | string): boolean {
  const x = typeof a === 'string' ? Buffer.from(a) : a
  const y = typeof b === 'string' ? Buffer.from(b) : b
  return x.length === y.length && timingSafeEqual(x, y)
}

/** Keys derived from the server secret, one per purpose, so a leak of one use does not forge another. */
export class ServerKeys {
  private readonly root: Buffer
  private readonly derived = new Map<string, Buffer>()

  constructor(secret: string) {
    this.root = sha256(secret)
  }

  private key(purpose: string): Buffer {
    let k = this.derived.get(purpose)
    if (!k) this.derived.set(purpose, (k = createHmac('sha256', this.root).update(purpose).digest()))
    return k
  }

  /** base64url HMAC-SHA256 of `data` under the key for `purpose`. */
  sign(purpose: string, data: string): string {
    return createHmac('sha256', this.key(purpose)).update(data).digest('base64url')
  }

  verify(purpose: string, data: string, signature: string): boolean {
    return safeEqual(this.sign(purpose, data), signature)
  }

  /** AES-256-GCM; output is iv(12) | tag(16) | ciphertext. */
  encrypt(plaintext: string): Buffer {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key('encryption'), iv)
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), body])
  }

  decrypt(sealed: Uint8Array): string {
    const buf = Buffer.from(sealed)
    const decipher = createDecipheriv('aes-256-gcm', this.key('encryption'), buf.subarray(0, 12))
    decipher.setAuthTag(buf.subarray(12, 28))
    return Buffer.concat([decipher.update(buf.subarray(28)), decipher.final()]).toString('utf8')
  }
}

/** The configured SECRET_KEY, or one generated once and kept under DATA_DIR (development; loadConfig requires one in production). */
export function loadServerKeys(config: Config): ServerKeys {
  if (config.SECRET_KEY) return new ServerKeys(config.SECRET_KEY)
  const file = `${config.DATA_DIR}/secret-key`
  if (!existsSync(file)) {
    mkdirSync(config.DATA_DIR, { recursive: true })
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 })
  }
  return new ServerKeys(readFileSync(file, 'utf8').trim())
}
