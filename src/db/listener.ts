/**
 * LISTEN on a connection of its own that comes back after it drops. postgres.js's `sql.listen`
 * listens again when its connection closes, but once: if the database is still unreachable at
 * that moment the channel is dropped for good, and the process never hears a notification
 * again. Here a lost connection is retried every RETRY_MS until it listens again, and
 * `onRelisten()` says so each time it does, because NOTIFY is not kept for a listener that
 * is not connected: whatever was signalled meanwhile is lost, and the caller must treat it as
 * "anything may have happened".
 */
import postgres from 'postgres'
import type { Sql } from './client'
import { log } from '../log'

const RETRY_MS = 1000

export interface Listener {
  close(): Promise<void>
}

/**
 * Listens to `channels` with the connection settings of `sql`. The first LISTEN is awaited and
 * its failure thrown; after that, losses are retried in the background.
 */
export async function listenForever(
  sql: Sql,
  channels: string[],
  onNotify: (channel: string, payload: string) => void,
  onRelisten: () => void,
): Promise<Listener> {
  let closed = false
  let retry: Timer | undefined
  let listened = false
  // sql's parsed settings with one connection of its own, as postgres.js's own listen makes it
  // (parsed settings are taken as they are, so `onnotify`, which its types leave out, is read)
  const settings = {
    ...sql.options,
    max: 1,
    idle_timeout: null,
    max_lifetime: null,
    fetch_types: false,
    onnotify: onNotify,
    // the connection is gone, and with it every LISTEN: listen again (the retry reconnects)
    onclose: () => schedule(0),
  }
  const connection = postgres(settings as unknown as postgres.Options<Record<string, never>>)
  const statement = channels.map(c => `listen "${c.replaceAll('"', '""')}"`).join('; ')

  async function start(): Promise<void> {
    try {
      await connection.unsafe(statement)
    } catch (error) {
      if (!listened) throw error
      log.warn('listen failed, retrying', { channels, error: error instanceof Error ? error.message : String(error), retry_ms: RETRY_MS })
      return schedule(RETRY_MS)
    }
    if (listened) {
      log.info('listening again', { channels })
      onRelisten()
    }
    listened = true
  }

  function schedule(ms: number) {
    if (closed || !listened || retry) return
    retry = setTimeout(() => {
      retry = undefined
      void start()
    }, ms)
  }

  await start()
  return {
    async close() {
      closed = true
      clearTimeout(retry)
      await connection.end({ timeout: 1 })
    },
  }
}
