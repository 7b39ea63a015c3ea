import { CR, LF } from './bytes'

const DOT = 46

const LINE_START = 0
const MID_LINE = 1
const AFTER_CR = 2
const AFTER_DOT = 3
const AFTER_DOT_CR = 4

/** A CR held back at the end of one chunk and emitted at the start of the next. */
const CR_BYTE = new Uint8Array([CR])

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
 *
 * The message bytes are kept as views into the fed chunks (nothing is copied until the caller
 * concatenates `chunks()`), so a chunk must not be modified after it was fed. Within a line only
 * CR and LF matter: they are found with indexOf, and everything between the removed bytes (a
 * stuffing dot, the end marker, a CR held back at the end of a chunk) is kept as one run.
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
    const len = chunk.length
    if (len === 0) return -1
    const parts = this.parts
    let state = this.state
    let n = 0
    let end = -1
    let i = 0
    /** Start of the run of bytes that is passed through unchanged. */
    let run = 0
    // A CR that ended the previous chunk: now we know what follows it.
    if (state === AFTER_CR) {
      // Emitted whether or not an LF follows (a bare CR is kept and flagged); the loop decides.
      parts.push(CR_BYTE)
      n++
    } else if (state === AFTER_DOT_CR) {
      if (chunk[0] === LF) {
        end = 1
        run = 1
        i = 1
        state = LINE_START
      } else {
        // <CRLF>.<CR>x: the dot was stuffing, the CR is bare.
        this.bareLineBreak = true
        parts.push(CR_BYTE)
        n++
        state = MID_LINE
      }
    }
    // Positions of the next CR and LF at or after i (-1: none left in the chunk).
    let nextCr = -2
    let nextLf = -2
    while (end < 0 && i < len) {
      if (state === MID_LINE) {
        if (nextCr !== -1 && nextCr < i) nextCr = chunk.indexOf(CR, i)
        if (nextLf !== -1 && nextLf < i) nextLf = chunk.indexOf(LF, i)
        let p: number
        if (nextCr < 0) p = nextLf
        else if (nextLf < 0) p = nextCr
        else p = Math.min(nextCr, nextLf)
        if (p < 0) {
          i = len
          break
        }
        i = p + 1
        if (chunk[p] === CR) state = AFTER_CR
        else this.bareLineBreak = true
        continue
      }
      const b = chunk[i]!
      if (state === AFTER_CR) {
        if (b === LF) {
          state = LINE_START
          i++
          continue
        }
        // A bare CR stays in the run; b is looked at again mid-line.
        this.bareLineBreak = true
        state = MID_LINE
      } else if (state === LINE_START) {
        if (b === DOT) {
          // The dot is either stuffing (RFC 5321 4.5.2) or the end marker's; it is never content.
          if (i > run) {
            parts.push(chunk.subarray(run, i))
            n += i - run
          }
          i++
          run = i
          state = AFTER_DOT
          continue
        }
        state = MID_LINE
      } else if (state === AFTER_DOT) {
        if (b === CR) {
          state = AFTER_DOT_CR
          i++
          continue
        }
        state = MID_LINE
      } else {
        // AFTER_DOT_CR, with the CR at i - 1 in this chunk.
        if (b === LF) {
          end = i + 1
          state = LINE_START
          // The run ends before the marker's CR (the dot already ended the previous one).
          break
        }
        this.bareLineBreak = true
        state = MID_LINE
      }
    }
    // Up to the end: the marker's CR (at end - 2) when it was found in this chunk, otherwise a CR
    // that ends the chunk is held back until the next one shows whether an LF follows.
    let stop = len
    if (end >= 0) stop = end >= 2 ? end - 2 : end
    else if (state === AFTER_CR || state === AFTER_DOT_CR) stop = len - 1
    if (stop > run) {
      parts.push(chunk.subarray(run, stop))
      n += stop - run
    }
    this.state = state
    this.size += n
    if (!this.oversize && this.size > this.maxBytes) this.oversize = true
    if (this.oversize) this.parts = []
    return end
  }

  chunks(): Uint8Array[] {
    return this.parts
  }
}
