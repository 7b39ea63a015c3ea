/** The health report's statement: whether the database answers at all. */
import type { Sql } from '../db/client'

/** The smallest statement the database must answer (a table-free `select 1`). */
export const pingDatabase = (sql: Sql) => sql`select 1`
