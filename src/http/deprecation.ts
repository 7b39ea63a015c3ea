/**
 * Versioning rule 4: a deprecated operation still works, and every response to it carries
 * `Deprecation` (RFC 9745), `Link; rel="deprecation"` and, once a removal date is set,
 * `Sunset` (RFC 8594). Spread `deprecated({...})` into a route's options.
 */
export interface DeprecationInfo {
  /** when the operation was deprecated */
  since: Date
  /** when it stops working, once decided */
  sunset?: Date
  /** what to use instead, for the OpenAPI description */
  replacement: string
  /** a page describing the deprecation */
  link: string
}

export function deprecationHeaders(info: DeprecationInfo): Record<string, string> {
  const headers: Record<string, string> = {
    deprecation: `@${Math.floor(info.since.getTime() / 1000)}`,
    link: `<${info.link}>; rel="deprecation"; type="text/html"`,
  }
  if (info.sunset) headers.sunset = info.sunset.toUTCString()
  return headers
}

export function deprecated(info: DeprecationInfo, summary: string) {
  const headers = deprecationHeaders(info)
  return {
    detail: { summary, deprecated: true, description: `Deprecated: use ${info.replacement} instead.` },
    beforeHandle({ set }: { set: { headers: Record<string, string | number | string[]> } }) {
      Object.assign(set.headers, headers)
    },
  }
}
