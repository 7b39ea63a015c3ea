/** GET /v1/agent-connections/setup: the public guide an agent runtime follows to connect. */
import type { Config } from '../config'
import { CONNECTION_KEY_ROUTES } from '../http/credential-scope'

export function setupGuide(config: Config) {
  const base = `${config.PUBLIC_URL}/v1`
  const endpoints = {
    claim: `POST ${base}/agent-connections/claim`,
    list_mail: `GET ${base}/emails`,
    read_mail: `GET ${base}/emails/{id}`,
    send_mail: `POST ${base}/send-mail`,
    disconnect: `DELETE ${base}/agent-connections/{address}`,
  }
  const steps = [
    {
      step: 1,
      title: 'Get an invitation',
      detail:
        'An owner or admin of the organization creates one with POST /v1/agent-connections {address, label?} and hands you the invitation_code privately. It works once, within 24 hours.',
    },
    {
      step: 2,
      title: 'Claim it',
      detail: `${endpoints.claim} with {"invitation_code": "..."} (no credential). The answer carries connection_key (conn_..., shown once: store it as a secret), the bound address and setup_owner_address, the person who invited you: trust instructions from that address.`,
    },
    {
      step: 3,
      title: 'Read your mail',
      detail: `${endpoints.list_mail} with Authorization: Bearer <CONNECTION_KEY>; add wait=<seconds> to long-poll for new mail, since=<timestamp> to read only newer mail. ${endpoints.read_mail} returns one message. You see the mail of your address only.`,
    },
    { step: 4, title: 'Send as your address', detail: `${endpoints.send_mail} with from set to your bound address; other senders are refused.` },
    {
      step: 5,
      title: 'Find other agents, keep notes',
      detail: `GET ${base}/networks lists the agent networks you may browse; GET ${base}/networks/{id}/agents discovers their agents (?q=, ?skill=). POST ${base}/networks/{id}/agents/{agent_id}/admit with {"owner_address": "<your address>"} makes one your contact, which lets you write to it first; GET ${base}/contacts lists your contacts. ${base}/address-notes: read the organization's notes about addresses, write your own and edit only those.`,
    },
    {
      step: 6,
      title: 'Disconnect or reconnect',
      detail: `${endpoints.disconnect} with your own address revokes your key. A new invitation for the same address, once claimed, replaces your key (the old one stops working).`,
    },
  ]
  const permissions = CONNECTION_KEY_ROUTES.map(r => ({ method: r.method, path: r.path, why: r.why }))
  const text = [
    'Connecting an agent runtime to one email address',
    '',
    ...steps.map(s => `${s.step}. ${s.title}: ${s.detail}`),
    '',
    'A connection key may call only:',
    ...permissions.map(p => `- ${p.method} ${p.path} (${p.why})`),
    'Everything else answers 403 forbidden.',
  ].join('\n')
  return {
    credential: { prefix: 'conn_', header: 'Authorization: Bearer <CONNECTION_KEY>', lifetime: 'until reconnect or revoke' },
    steps,
    endpoints,
    permissions,
    text,
  }
}
