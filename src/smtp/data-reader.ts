import { CR, LF } from './bytes'

const DOT = 46

const LINE_START = 0
const MID_LINE = 1
const AFTER_CR = 2
const AFTER_DOT = 3
const AFTER_DOT_CR = 4

/**
 * Incremental DATA reader: finds the end marker, undoes dot-stuffing, measures the size.
 *
 * Only <CRLF>.<CRLF> ends the data (the first CRLF may be the one that ended the DATA command).
 * A bare CR or LF is never a line boundary, so payloads such as <LF>.<LF> or <CR>.<CR> cannot end
 * the message early and smuggle the bytes after them in as commands; they are recorded in
 * `bareLineBreak` so the session can reject the message.
 *
 * Lines longer than the 1000 octets of RFC 5321 4.5.3.1.6 are accepted unchanged: cutting them
 * would corrupt the message, and maxMessageBytes bounds the memory anyway.
 *
 * Past maxMessageBytes the bytes are counted and dropped while the end marker is still looked
 * for, so the client can be answered 552 without desynchronising the stream.
 */
export class DataReader {
  /** Message bytes after unstuffing (excluding the end marker). */
  size = 0
  oversize = false
  bareLineBreak = false
  private state = LINE_START
  private parts: Uint8Array[] = []

  constructor(private readonly maxBytes: number) {}

  /** Consumes `chunk`; returns how many bytes were used if the end marker was reached, else -1. */
  feed(chunk: Uint8Array): number {
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
        if (b === DOT) {
          state = AFTER_DOT
          continue
        }
        state = MID_LINE
      } else if (state === AFTER_DOT) {
        if (b === CR) {
          state = AFTER_DOT_CR
          continue
        }
        // RFC 5321 4.5.2: the leading dot was stuffing; drop it and keep the rest of the line.
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
