/**
 * The Prefer request header (RFC 7240). Only `respond-async` is acted on; any other preference
 * is ignored, as the RFC asks of a server that does not support it.
 */

/** Whether `header` (a Prefer header's value, several joined by commas) asks for respond-async. */
export function prefersRespondAsync(header: string | undefined): boolean {
  if (!header) return false
  // a quoted value may hold commas or the token itself: it is no preference of its own
  const unquoted = header.replace(/"(?:[^"\\]|\\.)*"/g, '""')
  return unquoted.split(',').some(p => p.split(';')[0]!.split('=')[0]!.trim().toLowerCase() === 'respond-async')
}

/** The Preference-Applied header (RFC 7240 section 3) of an answer that honoured respond-async. */
export const RESPOND_ASYNC_APPLIED = ['preference-applied', 'respond-async'] as const
