/** The statements of an inbound batch's transaction that are not a message's store (../store-queries.ts) or receipts. */
import type { Tx } from '../../db/client'

/** Sets the transaction's lock_timeout (`set_config`, local to the transaction); not awaited, so it goes out before the first store. */
export const setLockTimeout = (tx: Tx, timeout: string) => tx`select set_config('lock_timeout', ${timeout}, true)`
