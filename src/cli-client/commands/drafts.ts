/** drafts: what waits for a person's approval, and deciding it (docs/drafts.md). */
import type { Command } from 'commander'
import { answer } from '../context'
import { ago, color, listing } from '../output'

type DraftStatus = 'draft' | 'pending_approval' | 'sending' | 'sent' | 'rejected'

const recipients = (d: { to: string[]; cc: string[]; bcc: string[] }) => [...d.to, ...d.cc, ...d.bcc].join(', ')

export function draftCommands(program: Command) {
  const drafts = program.command('drafts').description('drafts, and sends held for your approval')
  drafts
    .command('list', { isDefault: true })
    .description('list drafts (by default those waiting for approval)')
    .option('--status <status>', 'draft, pending_approval, sending, sent, rejected or all', 'pending_approval')
    .action((opts: { status: string }, cmd: Command) => {
      const status = opts.status === 'all' ? undefined : (opts.status as DraftStatus)
      return answer(
        cmd,
        api => api.sdk.get('/v1/drafts', { params: { query: { limit: 100, ...(status && { status }) } } }),
        data =>
          listing(
            data,
            ['status', 'from', 'to', 'subject', 'created', 'id'],
            d => [d.status, d.from, recipients(d), d.subject ?? '(template)', ago(d.created_at), d.id],
            opts.status === 'pending_approval' ? 'Nothing waits for approval.\n' : 'No drafts.\n',
          ),
      )
    })
  drafts
    .command('show <id>')
    .description('a draft whole: headers, text, and its decision')
    .action((id: string, _opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.get('/v1/drafts/{id}', { params: { path: { id } } }),
        d =>
          [
            `Status:  ${d.status}${d.rejection_reason ? ` (${d.rejection_reason})` : ''}`,
            `From:    ${d.from}`,
            `To:      ${recipients(d)}`,
            `Subject: ${d.subject ?? '(template)'}`,
            ...(d.scheduled_at ? [`At:      ${d.scheduled_at}`] : []),
            ...(d.attachments.length ? [`Files:   ${d.attachments.map(a => a.filename).join(', ')}`] : []),
            '',
            `${d.body_text ?? ''}\n`,
          ].join('\n'),
      ),
    )
  drafts
    .command('approve <id>')
    .description('approve a draft waiting for approval: it is sent now')
    .action((id: string, _opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.post('/v1/drafts/{id}/approve', { params: { path: { id } } }),
        d => `${color.green('Approved')} ${d.id}: ${d.status === 'sent' ? `sent (send ${d.send_id})` : d.status}\n`,
      ),
    )
  drafts
    .command('reject <id>')
    .description('reject a draft waiting for approval: nothing is sent')
    .option('--reason <text>', 'why; the agent sees it on its draft')
    .action((id: string, opts: { reason?: string }, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.post('/v1/drafts/{id}/reject', { params: { path: { id } }, body: opts.reason ? { reason: opts.reason } : {} }),
        d => `Rejected ${d.id}${d.rejection_reason ? `: ${d.rejection_reason}` : ''}\n`,
      ),
    )
}
