/**
 * The pattern language of filters and recipient routes, matched against one address
 * (case-insensitively; patterns are stored lowercased):
 *   `user@example.com`  exactly that address
 *   `@example.com`      any address at example.com (not its subdomains)
 *   `*`                 any run of characters, anywhere: `*@example.com`, `billing-*@*`, `*.example.com` after the @
 */
export function normalizePattern(pattern: string): string {
  return pattern.trim().toLowerCase()
}

export function matchesPattern(pattern: string, address: string): boolean {
  const a = address.toLowerCase()
  const p = pattern.startsWith('@') ? `*${pattern}` : pattern
  if (!p.includes('*')) return p === a
  const regex = new RegExp(`^${p.split('*').map(s => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
  return regex.test(a)
}

/** A pattern must look like an address, an `@domain`, or use `*` in place of parts of one. */
export function patternProblem(pattern: string): string | null {
  if (!pattern) return 'must not be empty'
  if (pattern.length > 500) return 'must be at most 500 characters'
  if (/\s/.test(pattern)) return 'must not contain spaces'
  if (pattern !== '*' && !pattern.includes('@')) return 'must be an address, an @domain, or a pattern with * such as *@example.com'
  if ((pattern.match(/@/g) ?? []).length > 1) return 'must contain at most one @'
  return null
}
