/** webhooks: the endpoints inbound mail is delivered to. */
import type { Command } from 'commander'
import { globals } from '../context'
import { ago, color, printJson, table } from '../output'

export function webhookCommands(program: Command) {
  const webhooks = program.command('webhooks').description('webhook endpoints: where inbound mail is POSTed')
  webhooks
    .command('list', { isDefault: true })
    .description('list active endpoints')
    .action(async (_opts, cmd: Command) => {
      const { api, json } = globals(cmd)
      const data = await api.sdk.get('/v1/endpoints', { params: { query: { limit: 100 } } })
      if (json) return printJson(data)
      if (!data.length) return void process.stdout.write('No webhook endpoints: add one with `agent-mail webhooks create <url>`.\n')
      process.stdout.write(
        table(
          ['url', 'enabled', 'domain', 'created', 'id'],
          data.map(e => [e.url, e.enabled ? 'yes' : 'no', e.domain_id ?? 'all (fallback)', ago(e.created_at), e.id]),
        ) + '\n',
      )
    })
  webhooks
    .command('create <url>')
    .description('deliver inbound mail to an https URL')
    .option('--domain-id <id>', 'only mail for this domain (paid plans)')
    .option('--disabled', 'create it disabled')
    .action(async (url: string, opts: { domainId?: string; disabled?: boolean }, cmd: Command) => {
      const { api, json } = globals(cmd)
      const endpoint = await api.sdk.post('/v1/endpoints', {
        body: { url, ...(opts.domainId && { domain_id: opts.domainId }), ...(opts.disabled && { enabled: false }) },
      })
      if (json) return printJson(endpoint)
      process.stdout.write(`${color.green('Created')} ${endpoint.id} → ${endpoint.url}\n`)
    })
  webhooks
    .command('delete <id>')
    .description('deactivate an endpoint for good')
    .action(async (id: string, _opts, cmd: Command) => {
      const { api, json } = globals(cmd)
      const endpoint = await api.sdk.delete('/v1/endpoints/{id}', { params: { path: { id } } })
      if (json) return printJson(endpoint)
      process.stdout.write(`Deactivated ${endpoint.id}\n`)
    })
  webhooks
    .command('test <id>')
    .description('send a signed test event to an endpoint and show its answer')
    .action(async (id: string, _opts, cmd: Command) => {
      const { api, json } = globals(cmd)
      const result = await api.sdk.post('/v1/endpoints/{id}/test', { params: { path: { id } } })
      if (json) return printJson(result)
      process.stdout.write(
        table(
          ['field', 'value'],
          Object.entries(result).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
        ) + '\n',
      )
    })
}
