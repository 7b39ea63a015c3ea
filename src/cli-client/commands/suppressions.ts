/** suppressions: the addresses the organization no longer sends to (hard bounces, complaints, by hand). */
import type { Command } from 'commander'
import { answer } from '../context'
import { ago, color, listing } from '../output'

export function suppressionCommands(program: Command) {
  const suppressions = program.command('suppressions').description('addresses sends are refused to: hard bounces, complaints, added by hand')
  suppressions
    .command('list', { isDefault: true })
    .description('list suppressed addresses, newest first')
    .action((_opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.get('/v1/suppressions', { params: { query: { limit: 100 } } }),
        data =>
          listing(data, ['address', 'reason', 'detail', 'added'], s => [s.address, s.reason, s.detail ?? '', ago(s.created_at)], 'No suppressed addresses.\n'),
      ),
    )
  suppressions
    .command('add <address>')
    .description('stop sending to an address')
    .option('--note <text>', 'why, for whoever reads the list')
    .action((address: string, opts: { note?: string }, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.post('/v1/suppressions', { body: { address, ...(opts.note && { detail: opts.note }) } }),
        entry => `${color.green('Suppressed')} ${entry.address} (${entry.reason})\n`,
      ),
    )
  suppressions
    .command('remove <address>')
    .description('send to an address again, whatever suppressed it')
    .action((address: string, _opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.delete('/v1/suppressions/{address}', { params: { path: { address } } }),
        result => `Removed ${result.address} from the suppression list\n`,
      ),
    )
}
