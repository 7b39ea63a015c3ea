/** functions deploy <file> and functions logs --follow. */
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import type { Command } from 'commander'
import type { Data } from '@agent-mail/sdk'
import { CliError, EXIT, type Api } from '../api'
import { answer, count, globals } from '../context'
import { ago, bytes, color, listing, printJson, progressBar } from '../output'

const FOLLOW_INTERVAL_MS = 2_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

async function findByName(api: Api, name: string): Promise<{ id: string; name: string } | null> {
  for await (const fn of api.sdk.list('/v1/functions', { params: { query: { limit: 100 } } })) if (fn.name === name) return fn
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
    .action((_opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.get('/v1/functions', { params: { query: { limit: 100 } } }),
        data => listing(data, ['name', 'status', 'routed', 'created', 'id'], f => [f.name, f.deploy_status, f.route ? 'yes' : 'no', ago(f.created_at), f.id]),
      ),
    )
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
      // the body is sent as serialized here, so its size is the one the bar counts
      const bodySerializer = () => payload
      let result: Data<'/v1/functions', 'post'>
      try {
        result = existing
          ? await api.sdk.put('/v1/functions/{id}', { params: { path: { id: existing.id } }, body: { name, code }, bodySerializer })
          : await api.sdk.post('/v1/functions', { body: { name, code }, bodySerializer })
        bar.update(Buffer.byteLength(payload))
      } finally {
        bar.stop()
      }
      if (json) return printJson(result)
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
        `${color.green(existing ? 'Redeployed' : 'Deployed')} ${result.name} (${result.id})${deployment ? `, ${bytes(deployment.bundle_bytes)}` : ''}\n`,
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
      print((await api.sdk.get('/v1/functions/{id}/logs', { params: { path: { id }, query: { limit: count('--limit', opts.limit) } } })).logs)
      if (opts.follow) process.stderr.write(color.dim('Following new lines (Ctrl-C to stop)...') + '\n')
      while (opts.follow) {
        await Bun.sleep(FOLLOW_INTERVAL_MS)
        print((await api.sdk.get('/v1/functions/{id}/logs', { params: { path: { id }, query: { limit: 500 } } })).logs)
      }
    })
}
