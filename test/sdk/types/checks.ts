/**
 * What the SDK's types accept and refuse, checked by the compiler (test/sdk/types.unit.test.ts runs
 * tsc on this file): each `@ts-expect-error` must meet an error, and everything else must compile.
 * Nothing here runs.
 */
import { type AgentMail, AgentMailError, isAgentMailError, verifyWebhook } from '@agent-mail/sdk'

declare const mail: AgentMail
declare const error: unknown

export async function checks() {
  // answers are the envelope's data, typed
  const me = await mail.get('/v1/whoami')
  const orgId: string = me.org_id
  // @ts-expect-error: no such field
  me.no_such_field
  // @ts-expect-error: no such path
  await mail.get('/v1/no-such-path')
  // @ts-expect-error: a path parameter is required
  await mail.get('/v1/inboxes/{id}')
  await mail.get('/v1/inboxes/{id}', { params: { path: { id: orgId } } })
  // @ts-expect-error: a body field of the wrong type
  await mail.post('/v1/inboxes', { body: { display_name: 42 } })
  // @ts-expect-error: a query value outside its enum
  await mail.get('/v1/emails', { params: { query: { direction: 'sideways' } } })
  await mail.post('/v1/send-mail', { body: { from: 'a@b.example', to: 'c@d.example', subject: 's', body_text: 't' }, idempotencyKey: 'k' })

  // lists: only cursor-paged operations, items typed
  for await (const inbox of mail.list('/v1/inboxes')) inbox.address satisfies string
  // @ts-expect-error: not a list
  mail.list('/v1/whoami')

  // errors: the code is the closed union
  if (error instanceof AgentMailError) {
    if (error.code === 'not_found' || error.code === 'network_error') return
    // @ts-expect-error: not a code the service has
    if (error.code === 'not_fuond') return
  }
  // @ts-expect-error: not a code the service has
  isAgentMailError(error, 'not_fuond')

  // webhook events typed by name
  const event = await verifyWebhook<'email.received'>('{}', {}, 'secret')
  event.email.headers.subject satisfies string
  // @ts-expect-error: not an event name
  await verifyWebhook<'email.receivd'>('{}', {}, 'secret')
}
