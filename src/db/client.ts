/**
 * The database handle: postgres.js against DATABASE_URL, or against the embedded PGlite
 * served on loopback when no URL is configured.
 */
import postgres from 'postgres'
import { ConfigError, type Config } from '../config'
import { log } from '../log'
import { Replica } from './replica'

export type Sql = postgres.Sql
/** A transaction handle passed down from `sql.begin`; usable wherever `Sql` queries are. */
export type Tx = postgres.TransactionSql | postgres.Sql

export interface Database {
  sql: Sql
  url: string
  embedded: boolean
  /** the streaming replica reads may use (DATABASE_REPLICA_URL) */
  replica?: Replica
  close(): Promise<void>
}

export function connectUrl(url: string, max = 10, options: { connect_timeout?: number } = {}): Sql {
  return postgres(url, {
    max,
    ...options,
    onnotice: () => {},
    // Timestamps come back as Date; bigint counters (storage bytes) as JS numbers, which is exact up to 2^53.
    types: { bigint: postgres.BigInt },
    transform: { undefined: null },
    connection: { application_name: 'agent-mail' },
  })
}

/** Opens the configured database, starting the embedded one when DATABASE_URL is unset. */
export async function openDatabase(config: Config): Promise<Database> {
  if (config.DATABASE_URL) {
    const sql = connectUrl(config.DATABASE_URL)
    const replica = config.DATABASE_REPLICA_URL
      ? new Replica(sql, connectUrl(config.DATABASE_REPLICA_URL, 5, { connect_timeout: 2 }), config.REPLICA_MAX_LAG_MS).start()
      : undefined
    return {
      sql,
      url: config.DATABASE_URL,
      embedded: false,
      replica,
      async close() {
        await replica?.close()
        await sql.end({ timeout: 5 })
      },
    }
  }
  const embedded = await (await loadEmbedded()).startEmbeddedPostgres(`${config.DATA_DIR}/pglite`, config.EMBEDDED_PG_PORT)
  // PGlite runs one session: postgres.js must hold a single connection or concurrent queries hang.
  const sql = connectUrl(embedded.url, 1)
  log.info('embedded database ready', { data_dir: `${config.DATA_DIR}/pglite` })
  return {
    sql,
    url: embedded.url,
    embedded: true,
    async close() {
      await sql.end({ timeout: 5 })
      await embedded.stop()
    },
  }
}

/**
 * The embedded database's module, loaded only when it is used: PGlite is a development
 * dependency, absent where the service was installed for production (the container image).
 */
async function loadEmbedded(): Promise<typeof import('./embedded')> {
  try {
    return await import('./embedded')
  } catch (error) {
    if (!/@electric-sql\/pglite/.test(String(error))) throw error
    throw new ConfigError([
      {
        key: 'DATABASE_URL',
        value: 'nothing',
        allowed: 'a postgres:// URL: the embedded database (development only) is not installed here (bun install --production)',
      },
    ])
  }
}
