/**
 * No runtime import loop in src/: a module's imports are evaluated before it, so in a loop one
 * module runs while another it needs is still half-initialised, and the structure stops reading
 * from the bottom up. Type-only imports are erased before run time and may go either way.
 */
import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { dirname, join, relative } from 'node:path'

const SRC = join(import.meta.dir, '../src')
const transpiler = new Bun.Transpiler({ loader: 'ts' })

/** Each source file with the source files it imports at run time (as the transpiled code does). */
async function runtimeImports(): Promise<Map<string, string[]>> {
  const files = [...new Glob('**/*.ts').scanSync(SRC)].filter(f => !f.endsWith('.d.ts'))
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const code = transpiler.transformSync(await Bun.file(join(SRC, file)).text())
    const targets = transpiler
      .scanImports(code)
      .filter(i => i.kind !== 'dynamic-import' && i.path.startsWith('.'))
      .map(i => relative(SRC, join(SRC, dirname(file), i.path)))
      .map(p => [p, `${p}.ts`, `${p}/index.ts`].find(c => known.has(c)))
      .filter((p): p is string => p !== undefined)
    graph.set(file, targets)
  }
  return graph
}

/** Every loop of the graph, each as the path from a file back to itself (one per set of files). */
function loops(graph: Map<string, string[]>): string[][] {
  const found = new Map<string, string[]>()
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') {
        const loop = [...path.slice(path.indexOf(next)), next]
        found.set([...new Set(loop)].sort().join(), loop)
      } else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return [...found.values()]
}

describe('the structure of src/', () => {
  test('has no runtime import loop (type-only imports allowed)', async () => {
    expect(loops(await runtimeImports()).map(loop => loop.join(' -> '))).toEqual([])
  })

  test('the check finds a loop when there is one', () => {
    const graph = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]])
    expect(loops(graph)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']])
  })
})
