/**
 * Repeating sends. Every tick carries an `interaction.json` part in the style of the
 * email-native interactions of the contract:
 *
 *   { "interaction_version": 1, "interaction_id": "<send id>@<sender domain>",
 *     "protocol": "repeat.tick", "protocol_version": 1, "step": "tick",
 *     "step_id": "<uuid>", "prev_step_id": null, "expires_at": null,
 *     "payload": { "repeat_id": "<send id>", "tick": 3, "every_minutes": 60,
 *                  "stop": "POST /v1/emails/{id}/repeat-stop" } }
 *
 * A recipient organization stops the repeat with POST /v1/emails/{id}/repeat-stop on the tick it
 * received; that works only when the tick passed DKIM for the sender's domain, so a forged
 * tick cannot stop somebody else's repeat.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { ApiError, errors } from '../errors'
import { findEmail, rawMessage } from '../mail/email-queries'
import { splitAddress } from '../mail/inbound/recipients'
import PostalMime from 'postal-mime'
import type { SendRow } from './model'
import { recordChanges } from '../changes/record'
import { sendChange } from '../changes/sources'
import { repeatSender, stopRepeatFor } from './repeat-queries'

export const REPEAT_PROTOCOL = 'repeat.tick'

export function tickPart(send: SendRow, domain: string) {
  return {
    filename: 'interaction.json',
    json: {
      interaction_version: 1,
      interaction_id: `${send.id}@${domain}`,
      protocol: REPEAT_PROTOCOL,
      protocol_version: 1,
      step: 'tick',
      step_id: randomUUIDv7(),
      prev_step_id: null,
      expires_at: null,
      payload: { repeat_id: send.id, tick: send.ticks + 1, every_minutes: send.repeat_every_minutes, stop: 'POST /v1/emails/{id}/repeat-stop' },
    },
  }
}

/** The repeat a received tick belongs to, read from its interaction.json part. */
async function repeatIdOf(raw: Uint8Array): Promise<string | null> {
  const parsed = await PostalMime.parse(raw, { attachmentEncoding: 'utf8' })
  for (const a of parsed.attachments) {
    if (a.filename !== 'interaction.json') continue
    try {
      const step = JSON.parse(String(a.content))
      if (step?.protocol === REPEAT_PROTOCOL && typeof step.payload?.repeat_id === 'string') return step.payload.repeat_id
    } catch {}
  }
  return null
}

/** A recipient stops a repeat from the tick it received (its own email id). */
export async function stopRepeatAsRecipient(ctx: AppContext, orgId: string, emailId: string) {
  const email = await findEmail(ctx.sql, { id: emailId, orgId }, ['direction', 'auth', 'from_address'])
  if (!email) throw errors.notFound('email')
  const repeatId = email.direction === 'inbound' ? await repeatIdOf(await rawMessage(ctx.sql, orgId, emailId)) : null
  if (!repeatId) throw errors.conflict('email: is not a tick of a repeating send')
  const send = await repeatSender(ctx.sql, repeatId)
  const senderDomain = send ? splitAddress(send.from_address).domain : null
  const authentic = email.auth.dkim?.some(d => d.result === 'pass' && d.domain === senderDomain) && email.from_address === send?.from_address
  if (!send || !authentic) throw new ApiError('forbidden', 'email: the tick is not authenticated (DKIM) by the sender of the repeat')
  await ctx.sql.begin(async tx => {
    const stopped = await stopRepeatFor(tx, repeatId, `recipient:${orgId}`)
    if (stopped) await recordChanges(tx, [sendChange('send.canceled', stopped)])
  })
  return { repeat_id: repeatId, stopped: true }
}
