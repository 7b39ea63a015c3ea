/**
 * How fast this machine's Bun signs, run as its own process on an otherwise idle machine:
 * `bun test/bench/sign-rate.ts <private-key-pem-file> <message-file>`.
 *
 * Two rates on one core (this process is single-threaded), each over 1 s after 1 s of warm-up:
 * - rsa_per_s: bare RSA-2048 signatures with node:crypto and an already parsed key, over a
 *   canonicalized header block's worth of bytes (the floor of any RSA-2048 DKIM signer);
 * - dkim_per_s: our whole signing step (src/mail/outbound/dkim.ts: mailauth's canonicalization
 *   and hashes of the message, then the signature with the key parsed once) on the message.
 * Prints one JSON object: {rsa_per_s, dkim_per_s}.
 */
import { createPrivateKey, sign } from 'node:crypto'
import { dkimSign } from '../../src/mail/outbound/dkim'

const [keyFile, messageFile] = process.argv.slice(2)
if (!keyFile || !messageFile) throw new Error('usage: sign-rate.ts <private-key-pem-file> <message-file>')
const privateKeyPem = await Bun.file(keyFile).text()
const message = await Bun.file(messageFile).text()

/** Calls per second of `f`, one after another, over `ms` after as long a warm-up (mailauth's code gets compiled). */
async function rate(f: () => unknown, ms = 1000): Promise<number> {
  for (const until = performance.now() + ms; performance.now() < until; ) await f()
  let n = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    await f()
    n++
  }
  return Math.round((n * 1000) / (performance.now() - start))
}

const key = createPrivateKey(privateKeyPem)
// DKIM signs the canonicalized signed header fields plus the DKIM-Signature header: a few hundred bytes
const headerBlock = Buffer.from(message.slice(0, message.indexOf('\r\n\r\n')))
const rsa = await rate(() => sign('sha256', headerBlock, key))
const dkim = await rate(() => dkimSign(message, { domain: 'bench.local', selector: 'bench', privateKeyPem }))
console.log(JSON.stringify({ rsa_per_s: rsa, dkim_per_s: dkim }))
