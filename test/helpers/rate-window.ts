/**
 * Rate limits count in fixed windows aligned to the minute: a test that fills a window must not
 * straddle the minute, or its last request lands in a fresh window.
 */

/** Sleeps into the next minute when fewer than `need` seconds remain in this one. */
export async function roomInWindow(need = 8): Promise<void> {
  const left = 60 - ((Date.now() / 1000) % 60)
  if (left < need) await Bun.sleep(left * 1000 + 50)
}
