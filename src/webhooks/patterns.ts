/**
 * The pattern language of filters and recipient routes, matched against one address
 * (case-insensitively; patterns are stored lowercased):
 *   `user@example.com`  exactly that address
 *   `@example.com`      any address at example.com (not its subdomains); the same as `*@example.com`
 *   `*`                 any run of characters, anywhere: `*@example.com`, `billing-*@*`, `*.example.com` after the @
 * Nothing else is special: `?`, `.`, `+` and brackets are literal characters.
 */
export function normalizePattern(pattern: string): string {
  return pattern.trim().toLowerCase()
}

/**
 * Glob matching without regular expressions: a pattern with many `*` turned into a regex
 * (`.*a.*a.*a...`) backtracks polynomially in the number of stars, and filters run on every
 * inbound message. This greedy matcher remembers only the last star, so it is O(pattern x address).
 */
function globMatch(p: string, a: string): boolean {
  let pi = 0
  let ai = 0
  let star = -1
  let resume = 0
  while (ai < a.length) {
    if (pi < p.length && p[pi] === '*') {
      star = pi++
      resume = ai
    } else if (pi < p.length && p[pi] === a[ai]) {
      pi++
      ai++
    } else if (star >= 0) {
      pi = star + 1
      ai = ++resume
    } else {
      return false
    }
  }
  while (pi < p.length && p[pi] === '*') pi++
  return pi === p.length
}

/** The pattern with its `@domain` shorthand written out as `*@domain`. */
export function expandPattern(pattern: string): string {
  const p = normalizePattern(pattern)
  return p.startsWith('@') ? `*${p}` : p
}

export function matchesPattern(pattern: string, address: string): boolean {
  return globMatch(expandPattern(pattern), address.trim().toLowerCase())
}

/** True for a pattern naming one address exactly (no `*`, not an `@domain`). */
export function isExactAddress(pattern: string): boolean {
  const p = normalizePattern(pattern)
  return !p.includes('*') && !p.startsWith('@')
}

/**
 * The domain part of a pattern when it names one domain exactly (`user@example.com`,
 * `@example.com`, `*@example.com`); null when the domain part has a `*` or there is none (`*`).
 */
export function patternDomain(pattern: string): string | null {
  const p = normalizePattern(pattern)
  const at = p.lastIndexOf('@')
  if (at < 0) return null
  const domain = p.slice(at + 1)
  return domain && !domain.includes('*') ? domain : null
}

/** A pattern must look like an address, an `@domain`, or use `*` in place of parts of one. */
export function patternProblem(pattern: string): string | null {
  if (!pattern) return 'must not be empty'
  if (pattern.length > 500) return 'must be at most 500 characters'
  if (/\s/.test(pattern)) return 'must not contain spaces'
  // PostgreSQL text cannot hold NUL, and no address carries control characters
  if (/[\x00-\x1f\x7f]/.test(pattern)) return 'must not contain control characters'
  if (pattern === '*' || /^\*+$/.test(pattern)) return null
  if (!pattern.includes('@')) return 'must be an address, an @domain, or a pattern with * such as *@example.com'
  if ((pattern.match(/@/g) ?? []).length > 1) return 'must contain at most one @'
  const domain = pattern.slice(pattern.indexOf('@') + 1)
  if (!domain) return 'must have a domain (or *) after the @'
  if (domain.startsWith('.') || domain.endsWith('.') || domain.includes('..')) return 'must have a well-formed domain after the @'
  return null
}
