/**
 * Which methods a path answers, for `405 method_not_allowed` with `Allow`: Elysia's router
 * reports a known path with an unknown method as not found, like an unknown path.
 */
import type { AnyElysia } from 'elysia'

interface RouteLike {
  method: string
  path: string
}

/** A lookup from a request path to the methods its routes declare (empty for an unknown path). */
export function methodsOf(app: AnyElysia): (path: string) => string[] {
  const byPattern = new Map<string, { pattern: RegExp; methods: Set<string> }>()
  for (const { method, path } of app.routes as unknown as RouteLike[]) {
    if (method === 'ALL') continue
    let entry = byPattern.get(path)
    if (!entry) {
      // a plugin's `/` route sits at `prefix/`; Elysia answers it with or without the slash
      const source = path
        .replace(/\/$/, '')
        .split('/')
        .map(part => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/')
      entry = { pattern: new RegExp(`^${source}/?$`), methods: new Set() }
      byPattern.set(path, entry)
    }
    entry.methods.add(method)
  }
  const entries = [...byPattern.values()]
  return path => {
    const methods = new Set<string>()
    for (const e of entries) if (e.pattern.test(path)) for (const m of e.methods) methods.add(m)
    return [...methods].sort()
  }
}
