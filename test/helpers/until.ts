/**
 * Reads `read()` every 50 ms until `done` holds of its value, and returns that value; after
 * `timeoutMs` it returns the last value read, so the test's own assertion says what was seen
 * instead of the test timing out with nothing.
 */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await read()
    if (done(v) || Date.now() > deadline) return v
    await Bun.sleep(50)
  }
}
