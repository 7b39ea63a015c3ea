/** One relay per application context (a pooled SMTP transport, or local delivery), created on first use. */
import type { AppContext } from '../context'
import { createRelay, type Relay } from '../mail/outbound/relay'

const relays = new WeakMap<AppContext, Relay>()

export function relayOf(ctx: AppContext): Relay {
  let relay = relays.get(ctx)
  if (!relay) relays.set(ctx, (relay = createRelay(ctx)))
  return relay
}

export async function closeRelay(ctx: AppContext) {
  await relays.get(ctx)?.close()
  relays.delete(ctx)
}
