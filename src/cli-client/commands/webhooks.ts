/** webhooks: the endpoints inbound mail is delivered to. */
import type { Command } from 'commander'
import { answer } from '../context'
import { ago, color, listing } from '../output'

export function webhookCommands(program: Command) {
  const webhooks = program.command('webhooks').description('webhook endpoints: where inbound mail is POSTed')
  webhooks
    .command('list', { isDefault: true })
    .description('list active endpoints')
    .action((_opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.get('/v1/endpoints', { params: { query: { limit: 100 } } }),
        data =>
          listing(
            data,
            ['url', 'enabled', 'domain', 'created', 'id'],
            e => [e.url, e.enabled ? 'yes' : 'no', e.domain_id ?? 'all (fallback)', ago(e.created_at), e.id],
            'No webhook endpoints: add one with `agent-mail webhooks create <url>`.\n',
          ),
      ),
    )
  webhooks
    .command('create <url>')
    .description('deliver inbound mail to an https URL')
    .option('--domain-id <id>', 'only mail for this domain (paid plans)')
    .option('--disabled', 'create it disabled')
    .action((url: string, opts: { domainId?: string; disabled?: boolean }, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.post('/v1/endpoints', { body: { url, ...(opts.domainId && { domain_id: opts.domainId }), ...(opts.disabled && { enabled: false }) } }),
        endpoint => `${color.green('Created')} ${endpoint.id} → ${endpoint.url}\n`,
      ),
    )
  webhooks
    .command('delete <id>')
    .description('deactivate an endpoint for good')
    .action((id: string, _opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.delete('/v1/endpoints/{id}', { params: { path: { id } } }),
        endpoint => `Deactivated ${endpoint.id}\n`,
      ),
    )
  webhooks
    .command('test <id>')
    .description('send a signed test event to an endpoint and show its answer')
    .action((id: string, _opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.post('/v1/endpoints/{id}/test', { params: { path: { id } } }),
        result => listing(Object.entries(result), ['field', 'value'], ([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
      ),
    )
}
