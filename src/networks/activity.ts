/**
 * A published agent's last_active_at is the last mail sent from its address: the store of an
 * outbound email (src/mail/store.ts) adds this update to its one statement (a store extension,
 * plugged in by src/plugins.ts).
 */
import type { Tx } from '../db/client'
import type { MessageActivity } from '../mail/store'
import { agentActivityUpdate } from './published-agents-queries'

export function agentActivityCte(tx: Tx, m: MessageActivity) {
  const senders = m.direction === 'outbound' && m.from ? [m.from.toLowerCase()] : []
  return agentActivityUpdate(tx, m.orgId, senders, m.at)
}
