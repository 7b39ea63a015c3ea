/**
 * bin/prune-node-modules.ts, which the Containerfile runs on the production node_modules: it
 * removes what no process loads (source maps, declarations, documents, the TypeScript sources
 * of compiled packages) and keeps what a package's runtime entry points name.
 */
import { afterAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

const dir = mkdtempSync(join(tmpdir(), 'prune-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function files(tree: Record<string, string>) {
  for (const [path, text] of Object.entries(tree)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
}

test('compiled packages lose their maps, declarations, documents and TypeScript sources; packages that run TypeScript keep theirs', async () => {
  files({
    // compiled JavaScript; its sources are named only by another tool's condition
    'node_modules/compiled/package.json': JSON.stringify({
      exports: { '.': { '@compiled/source': './src/index.ts', types: './index.d.ts', import: './index.js' } },
    }),
    'node_modules/compiled/index.js': 'export {}',
    'node_modules/compiled/index.js.map': '{}',
    'node_modules/compiled/index.d.ts': 'export {}',
    'node_modules/compiled/README.md': '# compiled',
    'node_modules/compiled/LICENSE': 'MIT',
    'node_modules/compiled/src/index.ts': 'export {}',
    // published as TypeScript, for Bun
    'node_modules/@scope/typescript/package.json': JSON.stringify({ exports: { '.': { bun: './index.ts' } } }),
    'node_modules/@scope/typescript/index.ts': "export * from './lib.ts'",
    'node_modules/@scope/typescript/lib.ts': 'export {}',
    'node_modules/@scope/typescript/lib.d.ts': 'export {}',
    // a nested package is judged by its own manifest
    'node_modules/compiled/node_modules/nested/package.json': JSON.stringify({ main: 'index.ts' }),
    'node_modules/compiled/node_modules/nested/index.ts': 'export {}',
  })
  const run = Bun.spawnSync([process.execPath, join(import.meta.dir, '../../bin/prune-node-modules.ts'), join(dir, 'node_modules')])
  expect(run.exitCode).toBe(0)
  expect(run.stdout.toString()).toContain('pruned 5 files')
  const kept = (path: string) => existsSync(join(dir, path))
  expect(
    [
      'compiled/index.js',
      'compiled/LICENSE',
      'compiled/package.json',
      '@scope/typescript/index.ts',
      '@scope/typescript/lib.ts',
      'compiled/node_modules/nested/index.ts',
    ].filter(p => !kept(`node_modules/${p}`)),
  ).toEqual([])
  expect(
    ['compiled/index.js.map', 'compiled/index.d.ts', 'compiled/README.md', 'compiled/src/index.ts', '@scope/typescript/lib.d.ts'].filter(p =>
      kept(`node_modules/${p}`),
    ),
  ).toEqual([])
})

test('a package of files the console serves keeps those files and its manifest only, and SERVED_ONLY names every file it serves from a package', async () => {
  files({
    'node_modules/@picocss/pico/package.json': '{}',
    'node_modules/@picocss/pico/css/pico.min.css': 'a{}',
    'node_modules/@picocss/pico/css/pico.amber.min.css': 'a{}',
    'node_modules/@picocss/pico/scss/_index.scss': '',
  })
  const proc = Bun.spawnSync([process.execPath, `${import.meta.dir}/../../bin/prune-node-modules.ts`, join(dir, 'node_modules')])
  expect(proc.exitCode).toBe(0)
  expect(existsSync(join(dir, 'node_modules/@picocss/pico/css/pico.min.css'))).toBe(true)
  expect(existsSync(join(dir, 'node_modules/@picocss/pico/package.json'))).toBe(true)
  expect(existsSync(join(dir, 'node_modules/@picocss/pico/css/pico.amber.min.css'))).toBe(false)
  expect(existsSync(join(dir, 'node_modules/@picocss/pico/scss/_index.scss'))).toBe(false)

  // what the console serves from packages (src/console/assets.ts), as `package/file`
  const { SERVED_ONLY } = await import('../../bin/prune-node-modules')
  const served = [...(await Bun.file(`${import.meta.dir}/../../src/console/assets.ts`).text()).matchAll(/fromPackage\('([^']+)'\)/g)].map(m => m[1]!)
  expect(served.length).toBeGreaterThan(0)
  for (const specifier of served) {
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!
    expect(SERVED_ONLY[name]).toContain(specifier.slice(name.length + 1))
  }
})
