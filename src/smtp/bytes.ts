/** Byte constants and helpers for the session's line reader, message assembly and the DATA reader. */

export const CR = 13
export const LF = 10

export function stripLineEnd(line: Uint8Array): Uint8Array {
  let end = line.length
  if (line[end - 1] === LF) end--
  if (line[end - 1] === CR) end--
  return line.subarray(0, end)
}

export function concat(parts: Uint8Array[]): Uint8Array {
  let total = 0
  for (const p of parts) total += p.length
  const out = new Uint8Array(total)
  let offset = 0
  for (const p of parts) {
    out.set(p, offset)
    offset += p.length
  }
  return out
}
