/** The README and docs/ point only at what a checkout has, and the configuration page lists every setting. */
import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ConfigSchema } from '../../src/config'
import { ERROR_STATUS } from '../../src/errors'
import { REPO } from '../helpers/dev-process'

const pages = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter(f => f.endsWith('.md'))
    .map(f => `docs/${f}`),
]
const read = (page: string) => readFileSync(join(REPO, page), 'utf8')

describe('README and docs/', () => {
  test('every relative link leads to a file of the repository', () => {
    const broken: string[] = []
    for (const page of pages) {
      for (const [, target] of read(page).matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue
        if (!existsSync(join(REPO, dirname(page), target!))) broken.push(`${page}: ${target}`)
      }
    }
    expect(broken).toEqual([])
  })

  test('the README links every page of docs/', () => {
    const readme = read('README.md')
    expect(pages.filter(p => p !== 'README.md' && !readme.includes(`](${p})`))).toEqual([])
  })

  test('a status written with a code ("409 `conflict`") names an error code of that status, what a client branches on', () => {
    // the OAuth endpoints answer their own error bodies ({error}), not the v1 envelope
    const oauth = new Set([
      'invalid_request',
      'invalid_grant',
      'invalid_client',
      'invalid_scope',
      'invalid_target',
      'unsupported_grant_type',
      'unsupported_response_type',
      'invalid_client_metadata',
      'invalid_redirect_uri',
    ])
    const wrong: string[] = []
    for (const page of pages) {
      for (const [written, status, code] of read(page).matchAll(/\b([45]\d\d)\s+`([a-z_]+)`/g)) {
        if (!oauth.has(code!) && ERROR_STATUS[code as keyof typeof ERROR_STATUS] !== Number(status)) wrong.push(`${page}: ${written!.replace(/\s+/g, ' ')}`)
      }
    }
    expect(wrong).toEqual([])
  })

  test('the configuration page names every setting', () => {
    const page = read('docs/configuration.md')
    expect(Object.keys(ConfigSchema.properties).filter(key => !page.includes(`\`${key}\``))).toEqual([])
  })
})

test('no command to paste needs Bun on the PATH (make installs it into .tools/)', () => {
  const needsBun: string[] = []
  for (const page of pages) {
    for (const [, block] of read(page).matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
      for (const line of block!.split('\n')) {
        const command = line.replace(/#.*/, '').trim() // a comment is not a command
        if (/(^|[;&|(]\s*|\$\()bunx?\s/.test(command)) needsBun.push(`${page}: ${line.trim()}`)
      }
    }
  }
  expect(needsBun).toEqual([])
})
