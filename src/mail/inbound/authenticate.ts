/**
 * SPF, DKIM, DMARC and ARC verdicts of an inbound message (mailauth), reduced to what reads,
 * webhooks and send gates need. Only `pass` counts as authenticated: a tampered body gives
 * DKIM `neutral`, not `fail`.
 */
import { authenticate } from 'mailauth'
import type { Resolver } from '../../dns/resolver'

export interface DkimVerdict {
  result: string
  domain: string
  selector: string
  /** aligned with the From domain (DMARC alignment) */
  aligned: boolean
  /** lowercase names of the header fields the signature covers */
  signed_headers: string[]
}

export interface AuthVerdicts {
  spf: { result: string; domain: string | null }
  dkim: DkimVerdict[]
  dmarc: { result: string; policy: string | null; domain: string | null }
  arc: { result: string }
}

interface MailauthDkimResult {
  signingDomain: string
  selector: string
  status: { result: string; aligned?: string | false }
  signingHeaders?: { keys: string }
}

/** The verdicts of a message nobody authenticated (the ones we send). */
export const NO_VERDICTS: AuthVerdicts = {
  spf: { result: 'none', domain: null },
  dkim: [],
  dmarc: { result: 'none', policy: null, domain: null },
  arc: { result: 'none' },
}

export async function authenticateMessage(
  raw: Uint8Array,
  session: { ip: string; helo?: string; mailFrom: string; mta: string },
  resolver: Resolver,
): Promise<AuthVerdicts> {
  const r = await authenticate(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), {
    ip: session.ip,
    helo: session.helo,
    sender: session.mailFrom || undefined,
    mta: session.mta,
    resolver: resolver as never,
    disableBimi: true,
  })
  const dkim = ((r.dkim?.results ?? []) as MailauthDkimResult[]).map(d => ({
    result: d.status.result,
    domain: d.signingDomain,
    selector: d.selector,
    aligned: Boolean(d.status.aligned),
    signed_headers: (d.signingHeaders?.keys ?? '')
      .split(':')
      .map(k => k.trim().toLowerCase())
      .filter(Boolean),
  }))
  const dmarc = r.dmarc as false | { status?: { result?: string }; policy?: string; domain?: string }
  return {
    spf: r.spf ? { result: r.spf.status?.result ?? 'none', domain: r.spf.domain ?? null } : { result: 'none', domain: null },
    dkim,
    dmarc: dmarc
      ? { result: dmarc.status?.result ?? 'none', policy: dmarc.policy ?? null, domain: dmarc.domain ?? null }
      : { result: 'none', policy: null, domain: null },
    arc: { result: (r.arc as { status?: { result?: string } } | undefined)?.status?.result ?? 'none' },
  }
}
