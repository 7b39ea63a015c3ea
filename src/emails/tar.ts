/** A gzip-compressed ustar archive (POSIX.1-1988) of in-memory files: enough for attachment downloads. */
const BLOCK = 512
const encoder = new TextEncoder()

function header(name: string, size: number, mtime: number): Uint8Array {
  const h = new Uint8Array(BLOCK)
  const put = (offset: number, length: number, value: string) => h.set(encoder.encode(value).subarray(0, length), offset)
  const octal = (offset: number, length: number, value: number) => put(offset, length, value.toString(8).padStart(length - 1, '0') + '\0')
  put(0, 100, name)
  octal(100, 8, 0o644)
  octal(108, 8, 0)
  octal(116, 8, 0)
  octal(124, 12, size)
  octal(136, 12, mtime)
  put(148, 8, '        ') // checksum is computed with this field as spaces
  put(156, 1, '0')
  put(257, 6, 'ustar\0')
  put(263, 2, '00')
  const sum = h.reduce((a, b) => a + b, 0)
  put(148, 8, sum.toString(8).padStart(6, '0') + '\0 ')
  return h
}

/** A file name safe inside an archive: no directories, no control characters, at most 100 bytes, unique. */
function safeNames(names: (string | null)[]): string[] {
  const used = new Set<string>()
  return names.map((raw, i) => {
    let name =
      (raw ?? `attachment-${i + 1}`)
        .replace(/[\\/\x00-\x1f\x7f]/g, '_')
        .replace(/^\.+/, '_')
        .slice(0, 90) || `attachment-${i + 1}`
    while (used.has(name)) name = `${i + 1}-${name}`.slice(0, 100)
    used.add(name)
    return name
  })
}

export function tarGz(files: { name: string | null; content: Uint8Array }[], mtime = Math.floor(Date.now() / 1000)): Uint8Array {
  const names = safeNames(files.map(f => f.name))
  const parts: Uint8Array[] = []
  files.forEach((f, i) => {
    parts.push(header(names[i]!, f.content.byteLength, mtime), f.content)
    const pad = (BLOCK - (f.content.byteLength % BLOCK)) % BLOCK
    if (pad) parts.push(new Uint8Array(pad))
  })
  parts.push(new Uint8Array(BLOCK * 2)) // end of archive
  const total = parts.reduce((n, p) => n + p.byteLength, 0)
  const tar = new Uint8Array(total)
  let offset = 0
  for (const p of parts) {
    tar.set(p, offset)
    offset += p.byteLength
  }
  return Bun.gzipSync(tar)
}
