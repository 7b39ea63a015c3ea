/**
 * The console's static files, served by the service itself (no CDN): htmx and Pico CSS straight
 * from node_modules (installed as dependencies, so the production image has them; no build
 * step), and the console's own stylesheet and script. Read once per process.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const fromPackage = (specifier: string) => Bun.resolveSync(specifier, import.meta.dir)
const own = (name: string) => join(import.meta.dir, 'assets', name)

const FILES: Record<string, { path: string; type: string }> = {
  'htmx.min.js': { path: fromPackage('htmx.org/dist/htmx.min.js'), type: 'text/javascript;charset=utf-8' },
  'pico.min.css': { path: fromPackage('@picocss/pico/css/pico.min.css'), type: 'text/css;charset=utf-8' },
  'console.css': { path: own('console.css'), type: 'text/css;charset=utf-8' },
  'console.js': { path: own('console.js'), type: 'text/javascript;charset=utf-8' },
}

const loaded = new Map<string, Uint8Array>()

/** The asset of this name, or null. */
export function asset(name: string): Response | null {
  const file = FILES[name]
  if (!file) return null
  let body = loaded.get(name)
  if (!body) loaded.set(name, (body = readFileSync(file.path)))
  return new Response(body, {
    headers: { 'content-type': file.type, 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' },
  })
}
