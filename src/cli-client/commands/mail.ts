/** inboxes, send, mail (list, label), tail (the long-poll, like tail -f), read. */
import { readFileSync, statSync } from 'node:fs'
import { basename } from 'node:path'
import type { Command } from 'commander'
import type { Data, Item } from '@agent-mail/sdk'
import { CliError, EXIT } from '../api'
import { answer, count, globals } from '../context'
import { address, ago, bytes, color, listing, printJson, progressBar } from '../output'

const collect = (value: string, previous: string[] = []) => [...previous, value]

/** Long-polls are cut at 60 s by the service; ask for a bit less. */
const WAIT_SECONDS = 30

const TYPES: Record<string, string> = {
  pdf: 'application/pdf',
  txt: 'text/plain',
  csv: 'text/csv',
  json: 'application/json',
  html: 'text/html',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  zip: 'application/zip',
}
const typeOf = (path: string) => TYPES[path.split('.').pop()?.toLowerCase() ?? ''] ?? 'application/octet-stream'

async function readStdin(): Promise<string> {
  return await new Response(Bun.stdin.stream()).text()
}

/** The JSON body as a stream of chunks, so an upload can report its progress. */
function streamed(text: string, onProgress: (sent: number) => void): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text)
  const CHUNK = 64 * 1024
  let sent = 0
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes.length) return controller.close()
      const next = bytes.subarray(sent, sent + CHUNK)
      sent += next.length
      controller.enqueue(next)
      onProgress(sent)
    },
  })
}

type Summary = Item<'/v1/emails'>

/** One message on one line: when, who, subject, attachments, id. */
function line(email: Summary): string {
  const clip = email.attachment_count ? color.dim(` +${email.attachment_count} attachment${email.attachment_count > 1 ? 's' : ''}`) : ''
  const who = email.direction === 'outbound' ? `→ ${email.to.map(address).join(', ')}` : address(email.from)
  return `${color.dim(new Date(email.received_at).toLocaleString())}  ${color.bold(who)}  ${email.subject}${clip}  ${color.dim(email.id)}`
}

export function mailCommands(program: Command) {
  const inboxes = program.command('inboxes').description('your email addresses: list them, or create one')
  inboxes
    .command('list', { isDefault: true })
    .description('list inboxes, newest first')
    .option('--limit <n>', 'how many', '50')
    .action(async (opts: { limit: string }, cmd: Command) => {
      const { api, json } = globals(cmd)
      const { items: data, total } = await api.sdk.page('/v1/inboxes', { params: { query: { limit: count('--limit', opts.limit) } } })
      if (json) return printJson(data)
      process.stdout.write(
        listing(
          data,
          ['address', 'name', 'created', 'id'],
          i => [i.address, i.display_name, ago(i.created_at), i.id],
          'No inboxes yet: create one with `agent-mail inboxes create`.\n',
        ),
      )
      if (total > data.length) process.stdout.write(color.dim(`${data.length} of ${total}\n`))
    })
  inboxes
    .command('create [local-part]')
    .description('create an inbox (a random address without local-part)')
    .option('--name <display-name>', 'the name shown in From')
    .action((localPart: string | undefined, opts: { name?: string }, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.post('/v1/inboxes', { body: { ...(localPart && { local_part: localPart }), ...(opts.name && { display_name: opts.name }) } }),
        inbox => `${color.green('Created')} ${color.bold(inbox.address)}\n`,
      ),
    )

  program
    .command('send')
    .description('send an email; the body from --text, --body-file, or stdin')
    .requiredOption('--from <address>', 'one of your addresses')
    .option('--to <address>', 'a recipient (repeat for more)', collect)
    .option('--cc <address>', 'a carbon-copy recipient (repeatable)', collect)
    .requiredOption('--subject <subject>', 'the subject line')
    .option('--text <text>', 'the plain-text body')
    .option('--body-file <path>', 'read the plain-text body from a file')
    .option('--html-file <path>', 'an HTML body from a file')
    .option('--attach <path>', 'attach a file (repeatable)', collect)
    .option('--reply-to-email <id>', 'answer this received email (keeps the thread; --to defaults to its sender)')
    .option('--at <time>', 'schedule: an ISO 8601 instant such as 2026-12-01T09:00:00Z')
    .option('--idempotency-key <key>', 'send at most once per key (default: a new random key, printed)')
    .option('--async', 'answer once the send is committed, without waiting for the relay (Prefer: respond-async)')
    .action(
      async (
        opts: {
          from: string
          to?: string[]
          cc?: string[]
          subject: string
          text?: string
          bodyFile?: string
          htmlFile?: string
          attach?: string[]
          replyToEmail?: string
          at?: string
          idempotencyKey?: string
          async?: boolean
        },
        cmd: Command,
      ) => {
        const { api, json } = globals(cmd)
        if (!opts.to?.length && !opts.replyToEmail) throw new CliError('send needs --to (or --reply-to-email)', EXIT.usage)
        let text = opts.text
        if (text === undefined && opts.bodyFile) text = opts.bodyFile === '-' ? await readStdin() : readFileSync(opts.bodyFile, 'utf8')
        if (text === undefined && !process.stdin.isTTY) text = await readStdin()
        if (text === undefined) throw new CliError('send needs a body: --text, --body-file, or stdin', EXIT.usage)
        const attachments = (opts.attach ?? []).map(path => {
          try {
            if (!statSync(path).isFile()) throw new Error('not a file')
            return { filename: basename(path), content_type: typeOf(path), content: readFileSync(path).toString('base64') }
          } catch (error) {
            throw new CliError(
              `--attach ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
              EXIT.usage,
            )
          }
        })
        const body = {
          from: opts.from,
          ...(opts.to?.length && { to: opts.to.length === 1 ? opts.to[0] : opts.to }),
          ...(opts.cc?.length && { cc: opts.cc }),
          subject: opts.subject,
          body_text: text,
          ...(opts.htmlFile && { body_html: readFileSync(opts.htmlFile, 'utf8') }),
          ...(attachments.length && { attachments }),
          ...(opts.replyToEmail && { in_reply_to_email_id: opts.replyToEmail }),
          ...(opts.at && { scheduled_at: opts.at }),
        }
        const key = opts.idempotencyKey ?? crypto.randomUUID()
        const payload = JSON.stringify(body)
        const bar = attachments.length ? progressBar(Buffer.byteLength(payload), 'uploading') : null
        let result: Awaited<ReturnType<typeof send>>
        const send = () =>
          api.sdk.post('/v1/send-mail', {
            body,
            bodySerializer: () => (bar ? streamed(payload, n => bar.update(n)) : payload),
            idempotencyKey: key,
            respondAsync: opts.async,
          })
        try {
          result = await send()
        } finally {
          bar?.stop()
        }
        if (json) return printJson(result)
        if (result.status === 'pending_approval') {
          process.stdout.write(
            `${color.yellow('Held for approval')}: draft ${result.draft_id}; an owner or admin runs \`agent-mail drafts approve ${result.draft_id}\`\n`,
          )
          return
        }
        const what =
          result.status === 'scheduled'
            ? `Scheduled for ${result.scheduled_at}`
            : result.idempotent_replay
              ? 'Already sent (same idempotency key)'
              : opts.async
                ? 'Accepted (relayed after the answer)'
                : 'Sent'
        process.stdout.write(`${color.green(what)}: ${result.id} to ${result.accepted.join(', ')}\n`)
        process.stderr.write(color.dim(`idempotency key: ${key} (pass --idempotency-key ${key} to retry safely)\n`))
      },
    )

  const mail = program.command('mail').description('the mail of your inboxes')
  mail
    .command('list', { isDefault: true })
    .description('list mail, newest first, received and sent')
    .option('--address <address>', 'only mail received at or sent from this address')
    .option('--inbox <id>', 'only the mail of this inbox (its id)')
    .option('--direction <direction>', 'inbound or outbound')
    .option('--thread <id>', 'only this thread')
    .option('--since <time>', 'only mail after this ISO 8601 instant, such as 2026-12-01T09:00:00Z')
    .option('--label <name>', 'only mail with this label (unread, a custom one); repeat it for all of them', collect)
    .option('--limit <n>', 'how many at most', '20')
    .action(
      async (
        opts: { address?: string; inbox?: string; direction?: string; thread?: string; since?: string; label?: string[]; limit: string },
        cmd: Command,
      ) => {
        const { api, json } = globals(cmd)
        const limit = count('--limit', opts.limit)
        if (opts.direction !== undefined && opts.direction !== 'inbound' && opts.direction !== 'outbound')
          throw new CliError('--direction: must be inbound or outbound', EXIT.usage)
        const query = {
          limit: Math.min(limit, 100),
          ...(opts.address && { address: opts.address }),
          ...(opts.inbox && { inbox_id: opts.inbox }),
          ...(opts.direction && { direction: opts.direction as 'inbound' | 'outbound' }),
          ...(opts.thread && { thread_id: opts.thread }),
          ...(opts.since && { since: opts.since }),
          ...(opts.label && { label: opts.label }),
        }
        const emails: Summary[] = []
        for await (const email of api.sdk.list('/v1/emails', { params: { query } })) if (emails.push(email) >= limit) break
        if (json) return printJson(emails)
        if (!emails.length) return void process.stdout.write('No mail.\n')
        process.stdout.write(emails.map(line).join('\n') + '\n')
      },
    )

  mail
    .command('label <ids...>')
    .description('add and remove labels on messages (up to 100), or with --thread on every message of a thread')
    .option('--add <name>', 'a label to add: read, unread, or a custom one (repeat it)', collect)
    .option('--remove <name>', 'a label to take off (repeat it)', collect)
    .option('--thread', 'the id is a thread: label every message of it')
    .action(async (ids: string[], opts: { add?: string[]; remove?: string[]; thread?: boolean }, cmd: Command) => {
      const { api, json } = globals(cmd)
      if (!opts.add && !opts.remove) throw new CliError('give --add or --remove (or both)', EXIT.usage)
      if (opts.thread && ids.length !== 1) throw new CliError('--thread: give one thread id', EXIT.usage)
      const body = { add: opts.add ?? [], remove: opts.remove ?? [] }
      const emails = opts.thread
        ? (await api.sdk.post('/v1/threads/{id}/labels', { params: { path: { id: ids[0]! } }, body })).emails
        : ids.length === 1
          ? [await api.sdk.post('/v1/emails/{id}/labels', { params: { path: { id: ids[0]! } }, body })]
          : (await api.sdk.post('/v1/emails/labels', { body: { ids, ...body } })).emails
      if (json) return printJson(emails)
      process.stdout.write(emails.map(e => `${e.id}  ${e.labels.join(', ')}`).join('\n') + '\n')
    })

  program
    .command('tail')
    .description('follow new mail as it arrives (long-poll), like tail -f')
    .option('--address <address>', 'only mail to this address')
    .option('--since <time>', 'start after this ISO 8601 instant (default: now)')
    .option('-n, --max <count>', 'stop after this many messages')
    .action(async (opts: { address?: string; since?: string; max?: string }, cmd: Command) => {
      const { api, json } = globals(cmd)
      const max = opts.max ? Number(opts.max) : Infinity
      if (!(max > 0)) throw new CliError('--max: must be a positive number', EXIT.usage)
      const wanted = opts.address?.toLowerCase()
      let shown = 0
      process.stderr.write(color.dim(`Waiting for mail${wanted ? ` to ${wanted}` : ''}... (Ctrl-C to stop)\n`))
      for await (const email of api.sdk.watchEmails({ direction: 'inbound', since: opts.since, limit: 50 }, { waitSeconds: WAIT_SECONDS })) {
        if (wanted && !email.to.some(t => t.address.toLowerCase() === wanted)) continue
        if (json) process.stdout.write(JSON.stringify(email) + '\n')
        else process.stdout.write(line(email) + '\n')
        if (++shown >= max) return
      }
    })

  program
    .command('read <email-id>')
    .description('show one email: headers, attachments, text')
    .option('--new', 'only what is new in it: the reply without its quoted history and signature (extracted_text)')
    .action((id: string, opts: { new?: boolean }, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.get('/v1/emails/{id}', { params: { path: { id } } }),
        email => read(email, opts.new),
      ),
    )
}

/** An email whole for a person: headers, attachments, then its text (only what is new in it, with `onlyNew`). */
function read(email: Data<'/v1/emails/{id}', 'get'>, onlyNew?: boolean): string {
  const lines = [
    `${color.bold('From:')}    ${address(email.from)}`,
    `${color.bold('To:')}      ${email.to.map(address).join(', ')}`,
    ...(email.cc.length ? [`${color.bold('Cc:')}      ${email.cc.map(address).join(', ')}`] : []),
    `${color.bold('Subject:')} ${email.subject}`,
    `${color.bold('Date:')}    ${email.received_at} (${ago(email.received_at)})`,
    `${color.bold('Labels:')}  ${email.labels.join(', ')}`,
    ...email.attachments.map(a => `${color.bold('Attached:')} ${a.filename ?? `#${a.index}`} (${a.content_type}, ${bytes(a.size_bytes)})`),
    '',
    onlyNew && email.extracted_text !== null
      ? email.extracted_text || color.dim('(nothing new: all quote)')
      : (email.text ?? color.dim(email.html ? '(HTML only; --json shows it)' : '(no text)')),
  ]
  return lines.join('\n') + '\n'
}
