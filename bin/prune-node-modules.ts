/**
 * `bun bin/prune-node-modules.ts <node_modules>`: removes from an installed node_modules what
 * no process loads at run time, for the production image (Containerfile): source maps, type
 * declarations, Markdown documents, and the TypeScript sources that packages such as viem, ox
 * and zod ship beside their compiled JavaScript. A package keeps its .ts files when its entry
 * points name one for the conditions Bun resolves at run time (a package published as
 * TypeScript); conditions of other tools (`types`, zod's `@zod/source`) do not count. Packages
 * of files served to browsers keep only the files the console serves (SERVED_ONLY).
 * Prints what it removed.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** The package.json conditions Bun's runtime resolves with (import or require). */
const RUNTIME_CONDITIONS = new Set(['bun', 'import', 'require', 'node', 'module', 'default'])
const NEVER_LOADED = /\.(map|md|d\.ts|d\.mts|d\.cts)$/
const TYPESCRIPT = /\.(ts|mts|cts)$/

/**
 * Packages no process loads, whose files the console serves to browsers (src/console/assets.ts):
 * only those files stay (Pico CSS ships 20 MB of variants of its one stylesheet).
 * test/image/prune.unit.test.ts checks that this names every file the console serves from a package.
 */
export const SERVED_ONLY: Record<string, string[]> = {
  '@picocss/pico': ['css/pico.min.css'],
  'htmx.org': ['dist/htmx.min.js'],
}

/** Removes every file of a served package but its manifest and the files the console serves. */
function keepServed(packageDir: string, keep: string[], removed: { files: number; bytes: number }, at = '') {
  for (const entry of readdirSync(join(packageDir, at), { withFileTypes: true })) {
    const relative = at ? `${at}/${entry.name}` : entry.name
    const path = join(packageDir, relative)
    if (entry.isDirectory()) keepServed(packageDir, keep, removed, relative)
    else if (relative !== 'package.json' && !keep.includes(relative)) {
      removed.bytes += statSync(path).size
      removed.files++
      rmSync(path)
    }
  }
}

/** Every file an entry point of the package names for the runtime's conditions. */
function runtimeTargets(exports: unknown, into: string[] = []): string[] {
  if (typeof exports === 'string') into.push(exports)
  else if (Array.isArray(exports)) for (const e of exports) runtimeTargets(e, into)
  else if (exports && typeof exports === 'object') {
    for (const [key, value] of Object.entries(exports)) if (key.startsWith('.') || RUNTIME_CONDITIONS.has(key)) runtimeTargets(value, into)
  }
  return into
}

function runsTypeScript(packageDir: string): boolean {
  let manifest: Record<string, unknown>
  try {
    manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'))
  } catch {
    return true // not a package we can read: leave its sources alone
  }
  const targets = [manifest.main, manifest.module, ...runtimeTargets(manifest.exports)].filter(t => typeof t === 'string') as string[]
  return targets.some(t => TYPESCRIPT.test(t) && !NEVER_LOADED.test(t))
}

function prune(dir: string, keepTypeScript: boolean, removed: { files: number; bytes: number }) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      // a nested node_modules holds packages of their own, each judged by its own manifest
      if (entry.name === 'node_modules') prunePackages(path, removed)
      else prune(path, keepTypeScript, removed)
    } else if (entry.isFile() && (NEVER_LOADED.test(entry.name) || (!keepTypeScript && TYPESCRIPT.test(entry.name)))) {
      removed.bytes += statSync(path).size
      removed.files++
      rmSync(path)
    }
  }
}

function prunePackages(nodeModules: string, removed: { files: number; bytes: number }) {
  for (const entry of readdirSync(nodeModules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue
    const path = join(nodeModules, entry.name)
    const name = nodeModules.split('/').at(-1)!.startsWith('@') ? `${nodeModules.split('/').at(-1)}/${entry.name}` : entry.name
    if (SERVED_ONLY[name]) keepServed(path, SERVED_ONLY[name], removed)
    else if (entry.name.startsWith('@')) prunePackages(path, removed)
    else prune(path, runsTypeScript(path), removed)
  }
}

if (import.meta.main) {
  const nodeModules = process.argv[2]
  if (!nodeModules) {
    console.error('usage: bun bin/prune-node-modules.ts <node_modules>')
    process.exit(2)
  }
  const removed = { files: 0, bytes: 0 }
  prunePackages(nodeModules, removed)
  console.log(`pruned ${removed.files} files (${(removed.bytes / 1e6).toFixed(1)} MB) that nothing loads at run time from ${nodeModules}`)
}
