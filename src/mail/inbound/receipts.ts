/**
 * Recognizing a message sent again. A client whose connection dropped after our commit and before
 * it read the `250` sends the message again, later, to any of our processes. Each stored message
 * that has a Message-ID leaves a receipt for RESEND_WINDOW (receipt-queries.ts): a digest of its
 * envelope (sender and recipients) and content (its Message-ID and body). A message whose receipt is there is answered
 * `250` and stored no second time; the receipt is claimed in the transaction that stores the
 * message, so of two copies arriving at once in two processes one is stored. A message without a
 * Message-ID is not recognized: nothing tells its resend from a second message with the same text.
 *
 * The body, not the whole message: a client may put fresh trace headers on each attempt (its own
 * `Received:` line), while the Message-ID and body it sends again are those of the message.
 */
import { createHash } from 'node:crypto'
import type { Tx } from '../../db/client'
import { insertReceipts } from './receipt-queries'

/** The blank line that ends the header block. */
const headerEnd = (raw: Uint8Array) => {
  for (let i = 0; i + 3 < raw.length; i++) if (raw[i] === 13 && raw[i + 1] === 10 && raw[i + 2] === 13 && raw[i + 3] === 10) return i + 4
  for (let i = 0; i + 1 < raw.length; i++) if (raw[i] === 10 && raw[i + 1] === 10) return i + 2
  return raw.length
}

/** The digest of a message with a Message-ID; null without one. */
export function resendDigest(msg: { raw: Uint8Array; mailFrom: string; rcptTo: string[] }, messageId: string | null): Buffer | null {
  if (!messageId) return null
  return createHash('sha256')
    .update(
      `${msg.mailFrom.toLowerCase()}\n${[...msg.rcptTo]
        .map(r => r.toLowerCase())
        .sort()
        .join(',')}\n${messageId}\n`,
    )
    .update(msg.raw.subarray(headerEnd(msg.raw)))
    .digest()
}

/**
 * Claims the receipts of a batch's messages in the transaction that stores them, in one statement:
 * for each, false when it was stored already (or is being stored now by another process, whose
 * commit this waits for), or appears earlier in the batch. A message without a digest is new.
 */
export async function claimReceipts(tx: Tx, digests: (Buffer | null)[]): Promise<boolean[]> {
  const keys = digests.filter(d => d !== null).map(d => d.toString('hex'))
  if (!keys.length) return digests.map(() => true)
  const claimed = new Set(await insertReceipts(tx, keys))
  return digests.map(d => d === null || claimed.delete(d.toString('hex')))
}
