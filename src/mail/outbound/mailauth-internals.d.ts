/**
 * The pieces of mailauth's DKIM signer that dkim.ts composes to sign with a parsed key (mailauth
 * 7.x ships no types for them). test/outbound/dkim.test.ts checks the result byte for byte
 * against mailauth's own dkimSign, so a change in these internals fails there first.
 */
declare module 'mailauth/lib/tools' {
  export interface ParsedHeader {
    key: string | null
    casedKey: string | undefined
    line: Buffer
  }
  export function parseHeaders(buf: Buffer): { parsed: ParsedHeader[]; original: Buffer }
  export function getSigningHeaderLines(parsed: ParsedHeader[], fieldNames: string): { keys: string; headers: ParsedHeader[] }
  export function formatSignatureHeaderLine(type: 'DKIM', values: Record<string, unknown>, folded: boolean): string
}

declare module 'mailauth/lib/dkim/header' {
  import type { getSigningHeaderLines } from 'mailauth/lib/tools'
  export function generateCanonicalizedHeader(
    type: 'DKIM',
    signingHeaderLines: ReturnType<typeof getSigningHeaderLines>,
    options: Record<string, unknown>,
  ): { canonicalizedHeader: Buffer; dkimHeaderOpts: Record<string, unknown> }
}

declare module 'mailauth/lib/dkim/body' {
  export function dkimBody(canonicalization: string, hashAlgo: string, maxBodyLength: number | false): { update(chunk: Buffer): void; digest(encoding: 'base64'): string }
}
