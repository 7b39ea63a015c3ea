/**
 * The seam where a send may be held instead of going out: before a send-mail request (a send,
 * reply or forward of the MCP tools) is sent, `holdSend` may keep it, answering in its place (a
 * draft that waits for approval: src/drafts/). Sending does not know what holds it; the
 * composition root plugs it in (src/plugins.ts).
 */
import type { Static } from '@sinclair/typebox'
import type { OperationCall } from '../http/operation'
import type { SendMailRequest, SendResponse } from './model'

/** The answer in place of the send, or null to send it. */
export type SendHold = (call: OperationCall, body: SendMailRequest) => Promise<Static<typeof SendResponse> | null>

declare module '../context' {
  interface Plugins {
    /** sending/operations.ts: asked before each send-mail request is sent */
    holdSend: SendHold
  }
}
