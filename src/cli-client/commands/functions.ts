/** functions deploy <file> and functions logs --follow. */
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import type { Command } from 'commander'
import { CliError, EXIT, type Api } from '../api'
import { globals } from '../context'
import { ago, bytes, color, printJson, progressBar, table } from '../output'

const FOLLOW_INTERVAL_MS = 2_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

async function findByName(api: Api, name: string): Promise<{ id: string; name: string } | null> {
  let cursor: string | null = null
  do {
    const page: { data: { id: string; name: string }[]; meta?: { cursor: string | null } } = await api.call(
      'GET',
      `/v1/functions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    const hit = page.data.find(f => f.name === name)
    if (hit) return hit
    cursor = page.meta?.cursor ?? null
  } while (cursor)
  return null
}

async function functionId(api: Api, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref
  const found = await findByName(api, ref)
  if (!found) throw new CliError(`no function named ${ref}`, EXIT.notFound, 'not_found')
  return found.id
}

export function functionCommands(program: Command) {
  const functions = program.command('functions').description('hosted functions that run on inbound mail')
  functions
    .command('list', { isDefault: true })
    .description('list functions')
    .action(async (_opts, cmd: Command) => {
      const { api, json } = globals(cmd)
      const { data } = await api.call('GET', '/v1/functions?limit=100')
      if (json) return printJson(data)
      process.stdout.write(
        table(
          ['name', 'status', 'routed', 'created', 'id'],
          data.map((f: any) => [f.name, f.deploy_status, f.route ? 'yes' : 'no', ago(f.created_at), f.id]),
        ) + '\n',
      )
    })
  functions
    .command('deploy <file>')
    .description('deploy an ESM module (creates the function, or redeploys the one of that name)')
    .option('--name <name>', 'the function name (default: the file name without extension)')
    .action(async (file: string, opts: { name?: string }, cmd: Command) => {
      const { api, json } = globals(cmd)
      let code: string
      try {
        code = readFileSync(file, 'utf8')
      } catch {
        throw new CliError(`${file}: cannot read the file`, EXIT.usage)
      }
      const name =
        opts.name ??
        basename(file)
          .replace(/\.[^.]+$/, '')
          .toLowerCase()
      const existing = await findByName(api, name)
      const payload = JSON.stringify({ name, code })
      const bar = progressBar(Buffer.byteLength(payload), 'uploading')
      let result: any
      try {
        result = existing
          ? (await api.call('PUT', `/v1/functions/${existing.id}`, { rawBody: payload })).data
          : (await api.call('POST', '/v1/functions', { rawBody: payload })).data
        bar.update(Buffer.byteLength(payload))
      } finally {
        bar.stop()
      }
      if (json) return printJson(result)
      const fn = result.function ?? result
      const deployment = result.deployment
      if (deployment?.status === 'failed') {
        const e = deployment.deploy_error
        throw new CliError(
          `deploy failed: ${e?.name}: ${e?.message}${e?.line ? ` (line ${e.line}${e.column ? `:${e.column}` : ''})` : ''}`,
          EXIT.error,
          'deploy_failed',
        )
      }
      process.stdout.write(
        `${color.green(existing ? 'Redeployed' : 'Deployed')} ${fn.name} (${fn.id})${deployment ? `, ${bytes(deployment.bundle_bytes)}` : ''}\n`,
      )
    })
  functions
    .command('logs <function>')
    .description('console output of a function (by name or id), oldest first')
    .option('-f, --follow', 'keep printing new lines')
    .option('--limit <n>', 'how many recent lines', '100')
    .action(async (ref: string, opts: { follow?: boolean; limit: string }, cmd: Command) => {
      const { api, json } = globals(cmd)
      const id = await functionId(api, ref)
      let last = ''
      const print = (lines: { id: string; level: string; message: string; logged_at: string }[]) => {
        for (const line of lines.filter(l => l.id > last).reverse()) {
          if (json) process.stdout.write(JSON.stringify(line) + '\n')
          else {
            const level = line.level === 'error' ? color.red(line.level) : line.level === 'warn' ? color.yellow(line.level) : color.dim(line.level)
            process.stdout.write(`${color.dim(line.logged_at)} ${level.padEnd(5)} ${line.message}\n`)
          }
          last = line.id
        }
      }
      print((await api.call('GET', `/v1/functions/${id}/logs?limit=${encodeURIComponent(opts.limit)}`)).data.logs)
      if (opts.follow) process.stderr.write(color.dim('Following new lines (Ctrl-C to stop)...') + '\n')
      while (opts.follow) {
        await Bun.sleep(FOLLOW_INTERVAL_MS)
        print((await api.call('GET', `/v1/functions/${id}/logs?limit=500`)).data.logs)
      }
    })
}
