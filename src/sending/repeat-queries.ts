/** The statements of a repeating send that a recipient stops (./repeat.ts): the sends table, read and stopped. */
import type { Sql, Tx } from '../db/client'
import type { SendRow } from './model'

/** What a recipient's stop checks of a repeat: its sender, and whether it is stopped already. */
export type RepeatSender = Pick<SendRow, 'from_address' | 'repeat_stopped_at'>

/** The repeat `id`'s sender, whatever its organization (the recipient's stop checks the tick's DKIM against it). */
export async function repeatSender(sql: Sql, id: string): Promise<RepeatSender | undefined> {
  const [send] = await sql<RepeatSender[]>`select from_address, repeat_stopped_at from sends where id = ${id}`
  return send
}

/**
 * Stops the repeat `id` on behalf of `stoppedBy` (`recipient:<org id>`) unless it was stopped
 * already; returns the send stopped now, if any.
 */
export async function stopRepeatFor(tx: Tx, id: string, stoppedBy: string): Promise<SendRow | undefined> {
  const [stopped] = await tx<SendRow[]>`
    update sends set repeat_stopped_at = coalesce(repeat_stopped_at, now()), repeat_stopped_by = coalesce(repeat_stopped_by, ${stoppedBy}),
           repeat_next_at = null, updated_at = now()
     where id = ${id} and repeat_stopped_at is null
    returning *`
  return stopped
}
