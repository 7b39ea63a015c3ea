/** Helpers shared by the benchmark sections of `make bench`. */

/** A free loopback port (the listener that found it is closed again at once). */
export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}

/** Runs a load process to completion and returns the JSON object on the last line of its stdout. */
export async function runJson<T>(argv: string[]): Promise<T> {
  const proc = Bun.spawn(argv, { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(proc.stdout).text()
  const code = await proc.exited
  const last = out.trim().split('\n').at(-1)
  if (code !== 0 || !last) throw new Error(`${argv.slice(0, 2).join(' ')} exited with ${code}`)
  return JSON.parse(last) as T
}

/** Kills the children a section started and waits for them. */
export async function stopAll(children: Bun.Subprocess[]): Promise<void> {
  for (const child of children) child.kill()
  await Promise.all(children.map(c => c.exited))
}
