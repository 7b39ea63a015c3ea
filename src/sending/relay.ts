/** One relay per process (a pooled SMTP transport, or local delivery), created on first use. */
import { perProcess } from '../context'
import { createRelay } from '../mail/outbound/relay'

export const relayOf = perProcess(createRelay)
