/**
 * Managed builds: uploaded source files bundled into one ESM module with Bun.build. The files
 * are written to a fresh temporary directory and bundled from there, with a plugin that refuses
 * every import that is not one of them (packages, node: modules, URLs, paths leaving the
 * directory): nothing is fetched, nothing of the host is read.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, isAbsolute, join, normalize, resolve, sep } from 'node:path'
import { errors } from '../errors'
import { CODE_RAW_BYTES } from './limits'

const MAX_FILES = 1000
const PATH = /^(?!\/)(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9._@+-]+(\/[A-Za-z0-9._@+-]+)*$/

/** Checks the uploaded file map and entry; each problem names its field. */
export function checkSources(files: Record<string, string>, entry: string) {
  const paths = Object.keys(files)
  if (!paths.length) throw errors.validation('files', 'must hold at least one file')
  if (paths.length > MAX_FILES) throw errors.validation('files', `at most ${MAX_FILES} files`)
  for (const p of paths)
    if (!PATH.test(p) || p.length > 500)
      throw errors.validation(`files.${p.slice(0, 100)}`, 'must be a relative path of letters, digits, . _ @ + - separated by /, without . or .. segments')
  const raw = paths.reduce((n, p) => n + Buffer.byteLength(files[p]!), 0)
  if (raw > CODE_RAW_BYTES) throw errors.validation('files', `are ${raw} bytes in all; at most ${CODE_RAW_BYTES / 1024 / 1024} MiB raw`)
  if (!(entry in files))
    throw errors.validation('entry', `must be one of the uploaded files (${paths.slice(0, 5).join(', ')}${paths.length > 5 ? ', ...' : ''})`)
}

/** Bundles the files from `entry` into one ESM module; a build error is a validation_error on `files`. */
export async function bundleSources(files: Record<string, string>, entry: string): Promise<string> {
  checkSources(files, entry)
  const dir = await mkdtemp(join(tmpdir(), 'function-build-'))
  try {
    for (const [path, content] of Object.entries(files)) {
      const file = join(dir, path)
      await mkdir(dirname(file), { recursive: true })
      await writeFile(file, content)
    }
    const refused: string[] = []
    const inside = (path: string) => path === dir || path.startsWith(dir + sep)
    const result = await Bun.build({
      entrypoints: [join(dir, entry)],
      target: 'browser',
      format: 'esm',
      throw: false,
      plugins: [
        {
          name: 'uploaded-files-only',
          setup(build) {
            build.onResolve({ filter: /.*/ }, args => {
              if (args.kind === 'entry-point-build') return undefined
              const relative = args.path.startsWith('./') || args.path.startsWith('../')
              const target = relative ? normalize(resolve(dirname(args.importer), args.path)) : isAbsolute(args.path) ? normalize(args.path) : null
              if (target && inside(target)) return undefined
              refused.push(`${args.path} (imported by ${args.importer.slice(dir.length + 1)})`)
              return { path: args.path, namespace: 'refused' }
            })
            build.onLoad({ filter: /.*/, namespace: 'refused' }, () => ({ contents: '', loader: 'js' }))
          },
        },
      ],
    })
    if (refused.length)
      throw errors.validation(
        'files',
        `imports outside the uploaded files are not allowed (no packages, node: modules or URLs; bundle them first): ${refused.slice(0, 5).join(', ')}`,
      )
    if (!result.success || !result.outputs[0]) {
      const messages = result.logs.map(l => String(l.message ?? l).replaceAll(dir + sep, '')).slice(0, 5)
      throw errors.validation('files', `the build failed: ${messages.join('; ') || 'no output'}`)
    }
    // the bundler names each source in a comment by its path from here; keep the uploaded path only
    const code = await result.outputs[0].text()
    return code.replace(/^\/\/ .*?function-build-[^/]+\//gm, '// ')
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
