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
  // Buffer.concat does not zero the memory it then fills
  return Buffer.concat(parts)
}
