/** mailauth ships no types for its DKIM message parser, which test/mail/inbound/dkim-chunks.unit.test.ts drives directly. */
declare module 'mailauth/lib/dkim/message-parser' {
  import { Writable } from 'node:stream'
  export class MessageParser extends Writable {
    /** the header section, parsed, once the empty line that ends it was seen */
    messageHeaders(headers: { original: Buffer }): Promise<void>
    /** the body after the header section, in pieces, line endings normalized to CRLF */
    nextChunk(chunk: Buffer): Promise<void>
    writeAsync(chunk: Buffer): Promise<void>
    finish(): Promise<void>
    ensureLinebreaks(input: Buffer): Generator<Buffer>
  }
}
