/**
 * SQL lives with its table's owner (docs/architecture.md, "SQL: each table has one owner"): every table
 * is read and written by statements in one folder of src/, and other folders call that folder's
 * queries module. This test parses src/ with the TypeScript compiler, reads every SQL statement
 * (templates tagged `sql` or `tx`, nested fragments included, and `.unsafe(...)` strings), finds
 * the tables named after from, join, into, update, using and truncate, and names file:line for
 * each table used outside its owner's folder.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'

const ROOT = join(import.meta.dir, '..')
const SRC = join(ROOT, 'src')

/** Each table created by sql/*.sql, and the folder of src/ whose statements alone may name it. */
const OWNERS: Record<string, string> = {
  // the core
  orgs: 'account',
  memberships: 'account',
  users: 'account',
  webhook_secrets: 'account',
  api_keys: 'auth',
  oauth_clients: 'oauth',
  oauth_grants: 'oauth',
  oauth_codes: 'oauth',
  oauth_tokens: 'oauth',
  oauth_authorization_requests: 'oauth',
  changes: 'changes',
  change_counters: 'changes',
  domains: 'domains',
  emails: 'mail',
  email_contents: 'mail',
  threads: 'mail',
  outbox_messages: 'mail',
  managed_dkim_keys: 'mail',
  managed_inboxes: 'mail',
  inbound_receipts: 'mail',
  idempotency_keys: 'http',
  rate_limit_windows: 'http',
  jobs: 'jobs',
  // the features
  functions: 'functions',
  function_activity: 'functions',
  function_deployments: 'functions',
  function_invocations: 'functions',
  function_logs: 'functions',
  function_secrets: 'functions',
  function_test_runs: 'functions',
  endpoints: 'webhooks',
  endpoint_tests: 'webhooks',
  webhook_deliveries: 'webhooks',
  filters: 'webhooks',
  recipient_routes: 'webhooks',
  registries: 'registries',
  registry_agents: 'registries',
  networks: 'networks',
  network_members: 'networks',
  network_invitation_blocks: 'networks',
  published_agents: 'networks',
  sends: 'sending',
  suppressions: 'sending',
  drafts: 'drafts',
  approval_policies: 'drafts',
  draft_approval_links: 'drafts',
  send_counts: 'sending',
  x402_challenges: 'x402',
  x402_declined_payments: 'x402',
  x402_interaction_steps: 'x402',
  x402_interactions: 'x402',
  x402_ledger: 'x402',
  x402_payout_addresses: 'x402',
  x402_settle_caps: 'x402',
  x402_settlements: 'x402',
  x402_spend_policies: 'x402',
  x402_totals: 'x402',
  memories: 'memories',
  memory_usage: 'memories',
  agent_connections: 'connections',
  signups: 'signups',
  cli_device_codes: 'cli',
  cli_device_pages: 'cli',
  console_sessions: 'console',
  contacts: 'contacts',
  address_notes: 'notes',
  wakes: 'wake',
  wake_runs: 'wake',
  email_templates: 'templates',
  credit_codes: 'credits',
  labels: 'labels',
}

/** Tables that a migration created and a later one dropped: no statement may name them. */
const DROPPED = new Set(['inbound_queue'])

/**
 * Foreign uses of FEATURE tables that the session moving those tables has not moved yet
 * (`file: tables`). The integrator empties this list once both branches are merged; a core
 * table never goes here.
 */
const PENDING: Record<string, string[]> = {}

/**
 * Every statement of src/ sits in a queries module (`queries.ts`, `<table>-queries.ts`), which the
 * folder's services call; src/db/ alone, the database machinery (migrations, statistics, the
 * replica's position, LISTEN), names no table of a feature and keeps its statements where they work.
 */
const UNGATHERED = new Set(['db'])

/** Whether a file is a queries module: `queries.ts` or `<name>-queries.ts`. */
const isQueriesModule = (file: string) => /(?:^|[/-])queries\.ts$/.test(file)

const CORE_FOLDERS = new Set(['account', 'auth', 'oauth', 'changes', 'domains', 'mail', 'http', 'jobs'])

interface Use {
  file: string
  line: number
  table: string
}

const TABLE_AFTER = /\b(?:from|join|into|update|using|truncate(?:\s+table)?)\s+(?:only\s+)?([a-z][a-z0-9_]*)\b/gi

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** Whether a template's tag is a database handle: `sql`, `tx`, `ctx.sql`, `sql<Row[]>`. */
function isSqlTag(tag: ts.Expression): boolean {
  const name = ts.isPropertyAccessExpression(tag) ? tag.name.text : ts.isIdentifier(tag) ? tag.text : ''
  return name === 'sql' || name === 'tx'
}

/** The tables named by the SQL text of one literal node, with their lines. */
function tablesIn(source: ts.SourceFile, node: ts.Node, file: string): Use[] {
  const text = node.getText(source)
  const start = node.getStart(source)
  return [...text.matchAll(TABLE_AFTER)].flatMap(match => {
    const table = match[1]!.toLowerCase()
    if (!(table in OWNERS) && !DROPPED.has(table)) return []
    const { line } = source.getLineAndCharacterOfPosition(start + match.index!)
    return [{ file, line: line + 1, table }]
  })
}

/** The SQL text nodes of one source file: the literals of each `sql`/`tx` template, and `.unsafe(...)` arguments. */
function sqlTexts(source: ts.SourceFile): ts.Node[] {
  const texts: ts.Node[] = []
  const visit = (node: ts.Node) => {
    if (ts.isTaggedTemplateExpression(node) && isSqlTag(node.tag)) {
      const template = node.template
      texts.push(...(ts.isNoSubstitutionTemplateLiteral(template) ? [template] : [template.head, ...template.templateSpans.map(span => span.literal)]))
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'unsafe' && node.arguments[0]) {
      texts.push(node.arguments[0])
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return texts
}

const parse = (file: string, text: string) => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)

/** The uses of tables by the statements of one source file (`file` relative to the repository). */
function usesIn(file: string, text: string): Use[] {
  const source = parse(file, text)
  return sqlTexts(source).flatMap(node => tablesIn(source, node, file))
}

/** The lines of one source file that hold SQL text (`file:line`). */
function sqlLinesIn(file: string, text: string): string[] {
  const source = parse(file, text)
  const lines = sqlTexts(source).map(node => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1)
  return [...new Set(lines)].map(line => `${file}:${line}`)
}

/** Every use of a table by a statement in src/. */
const tableUses = (): Use[] => sourceFiles(SRC).flatMap(path => usesIn(relative(ROOT, path), readFileSync(path, 'utf8')))

const folderOf = (file: string) => file.split('/')[1]!.replace(/\.ts$/, '')

/** Every line of SQL in src/ outside the queries modules (and src/db/). */
const strayStatements = (): string[] =>
  sourceFiles(SRC)
    .map(path => relative(ROOT, path))
    .filter(file => !UNGATHERED.has(folderOf(file)) && !isQueriesModule(file))
    .flatMap(file => sqlLinesIn(file, readFileSync(join(ROOT, file), 'utf8')))

describe('SQL ownership', () => {
  const uses = tableUses()

  test('the map names every table the migrations create, and nothing else', () => {
    const created = new Set<string>()
    for (const name of readdirSync(join(ROOT, 'sql'))) {
      const text = readFileSync(join(ROOT, 'sql', name), 'utf8')
      for (const m of text.matchAll(/create table (?:if not exists )?([a-z][a-z0-9_]*)/gi)) created.add(m[1]!.toLowerCase())
    }
    for (const dropped of DROPPED) created.delete(dropped)
    expect([...created].sort()).toEqual(Object.keys(OWNERS).sort())
  })

  test('the scan finds statements (so an empty result means no foreign use, not a broken scan)', () => {
    const found = new Set(uses.map(u => u.table))
    expect(found.has('orgs')).toBe(true)
    expect(found.has('emails')).toBe(true)
    expect(uses.length).toBeGreaterThan(300)
  })

  test('the scan reads nested fragments, typed tags, ctx.sql and .unsafe, and skips other templates', () => {
    const text = [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template, as a file holds it
      'const a = sql<Row[]>`select o.plan from orgs o where o.id = ${id}`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template, as a file holds it
      'const b = tx`with x as (${tx`delete from jobs where id = ${id}`}) select 1`',
      'const c = ctx.sql`select 1 from emails e\n  join threads t on t.id = e.thread_id`',
      "const d = sql.unsafe('update domains set name = name')",
      'const e = html`<p>mail from users of orgs</p>`',
      "const f = 'select * from memberships'",
    ].join('\n')
    expect(usesIn('src/webhooks/x.ts', text).map(u => `${u.line} ${u.table}`)).toEqual(['1 orgs', '2 jobs', '3 emails', '4 threads', '5 domains'])
  })

  test('no statement names a dropped table', () => {
    expect(uses.filter(u => DROPPED.has(u.table)).map(u => `${u.file}:${u.line} ${u.table}`)).toEqual([])
  })

  test("each table is used only in its owner's folder (PENDING aside)", () => {
    const foreign = uses
      .filter(u => OWNERS[u.table] && folderOf(u.file) !== OWNERS[u.table])
      .filter(u => !PENDING[u.file]?.includes(u.table))
      .map(u => `${u.file}:${u.line} uses ${u.table}, owned by ${OWNERS[u.table]}/`)
    expect(foreign).toEqual([])
  })

  test('SQL sits only in queries modules, outside src/db/', () => {
    expect(strayStatements()).toEqual([])
  })

  test('the check reads queries modules apart from services', () => {
    expect(['src/notes/queries.ts', 'src/x402/email/step-queries.ts', 'src/notes/service.ts', 'src/notes/queries-cache.ts'].map(isQueriesModule)).toEqual([
      true,
      true,
      false,
      false,
    ])
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template, as a file holds it
    expect(sqlLinesIn('src/notes/service.ts', 'const a = 1\nconst b = sql`c.org_id = ${id}`\nconst c = html`<p>from notes</p>`')).toEqual([
      'src/notes/service.ts:2',
    ])
  })

  test('PENDING holds feature tables only, and only uses that still exist', () => {
    const core = Object.entries(PENDING).flatMap(([file, tables]) => tables.filter(t => CORE_FOLDERS.has(OWNERS[t] ?? '')).map(t => `${file} ${t}`))
    expect(core).toEqual([])
    const stale = Object.entries(PENDING).flatMap(([file, tables]) =>
      tables.filter(t => !uses.some(u => u.file === file && u.table === t)).map(t => `${file} ${t}`),
    )
    expect(stale).toEqual([])
  })
})
