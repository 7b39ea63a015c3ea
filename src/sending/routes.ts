/**
 * The Sending route written by hand: the public sandbox of send-mail (no credential, so no
 * declaration). Sending itself and the other Sending operations are declared in operations.ts.
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { publicAccess } from '../http/auth'
import { Ok } from '../http/envelope'
import { DemoSendResponse, SendMailBody } from './model'
import { demoSend } from './service'

export function sendingRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1', tags: ['Sending'] }).use(publicAccess(ctx)).post('/send-mail/demo', ({ body }) => demoSend(body), {
    body: SendMailBody,
    response: { 200: Ok(DemoSendResponse) },
    // public, so it keeps the default body limit: the sandbox needs no large attachments
    detail: { summary: 'Sandbox send: validates like send-mail; nothing is sent, queued or stored', security: [] },
  })
}
