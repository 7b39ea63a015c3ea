/**
 * The planner's statistics and the dead rows of busy tables, kept up where autovacuum does not
 * run (it is off on this project's development PostgreSQL, as on some managed ones).
 *
 * Why it matters beyond row estimates: postgres.js prepares every statement, and PostgreSQL
 * keeps a generic plan for a statement after five executions. A plan made while a table held a
 * few rows scans it whole, and is kept until the table's statistics change, however much it
 * grows. ANALYZE changes them, so every cached plan on the table is made again on its next use.
 */
import type { Tx } from './client'
import { log } from '../log'

/** A table's setting from its reloptions (sql/0027 sets the jobs table's), else autovacuum's default. */
const option = (name: string, fallback: number) =>
  `coalesce((select option_value::float8 from pg_options_to_table(c.reloptions) where option_name = '${name}'), ${fallback})`

/**
 * Analyzes the tables changed by more than autovacuum's thresholds since their last analyze
 * (50 rows plus a tenth of the table, or the table's own settings), and where autovacuum is off
 * vacuums those with more dead rows than its thresholds (50 plus a fifth). Returns what it did.
 */
export async function refreshStatistics(sql: Tx): Promise<{ analyzed: string[]; vacuumed: string[] }> {
  const tables = await sql.unsafe<{ name: string; analyze: boolean; vacuum: boolean }[]>(`
    select format('%I.%I', s.schemaname, s.relname) as name,
           s.n_mod_since_analyze > ${option('autovacuum_analyze_threshold', 50)} + ${option('autovacuum_analyze_scale_factor', 0.1)} * greatest(c.reltuples, 0) as analyze,
           current_setting('autovacuum') = 'off'
             and s.n_dead_tup > ${option('autovacuum_vacuum_threshold', 50)} + ${option('autovacuum_vacuum_scale_factor', 0.2)} * greatest(c.reltuples, 0) as vacuum
      from pg_stat_user_tables s join pg_class c on c.oid = s.relid
     where s.schemaname = current_schema()`)
  const analyzed = tables.filter(t => t.analyze && !t.vacuum).map(t => t.name)
  const vacuumed = tables.filter(t => t.vacuum).map(t => t.name)
  // one statement per table: a long one would hold its lock on every table named
  for (const name of analyzed) await sql.unsafe(`analyze ${name}`)
  for (const name of vacuumed) await sql.unsafe(`vacuum (analyze) ${name}`)
  return { analyzed, vacuumed }
}

/**
 * After migrations: analyzes the tables that hold rows, so plans see the schema's new indexes
 * and columns with statistics. Empty tables are left unanalyzed: until its first ANALYZE the
 * planner takes a table for at least ten pages, so a fresh database's plans use the indexes
 * instead of scanning tables that are about to fill.
 */
export async function analyzeFilledTables(sql: Tx): Promise<string[]> {
  const filled = await sql<{ name: string }[]>`
    select format('%I.%I', n.nspname, c.relname) as name
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'r' and n.nspname = current_schema() and pg_relation_size(c.oid) > 0`
  for (const { name } of filled) await sql.unsafe(`analyze ${name}`)
  if (filled.length) log.info('tables analyzed after migrations', { tables: filled.length })
  return filled.map(t => t.name)
}
