/** suppressions: the addresses the organization no longer sends to (hard bounces, complaints, by hand). */
import type { Command } from 'commander'
import { globals } from '../context'
import { ago, color, printJson, table } from '../output'

export function suppressionCommands(program: Command) {
  const suppressions = program.command('suppressions').description('addresses sends are refused to: hard bounces, complaints, added by hand')
  suppressions
    .command('list', { isDefault: true })
    .description('list suppressed addresses, newest first')
    .action(async (_opts, cmd: Command) => {
      const { api, json } = globals(cmd)
      const data = await api.sdk.get('/v1/suppressions', { params: { query: { limit: 100 } } })
      if (json) return printJson(data)
      if (!data.length) return void process.stdout.write('No suppressed addresses.\n')
      process.stdout.write(
        table(
          ['address', 'reason', 'detail', 'added'],
          data.map(s => [s.address, s.reason, s.detail ?? '', ago(s.created_at)]),
        ) + '\n',
      )
    })
  suppressions
    .command('add <address>')
    .description('stop sending to an address')
    .option('--note <text>', 'why, for whoever reads the list')
    .action(async (address: string, opts: { note?: string }, cmd: Command) => {
      const { api, json } = globals(cmd)
      const entry = await api.sdk.post('/v1/suppressions', { body: { address, ...(opts.note && { detail: opts.note }) } })
      if (json) return printJson(entry)
      process.stdout.write(`${color.green('Suppressed')} ${entry.address} (${entry.reason})\n`)
    })
  suppressions
    .command('remove <address>')
    .description('send to an address again, whatever suppressed it')
    .action(async (address: string, _opts, cmd: Command) => {
      const { api, json } = globals(cmd)
      const result = await api.sdk.delete('/v1/suppressions/{address}', { params: { path: { address } } })
      if (json) return printJson(result)
      process.stdout.write(`Removed ${result.address} from the suppression list\n`)
    })
}
