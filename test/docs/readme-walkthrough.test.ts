/**
 * The README's walkthrough, run from the README text itself against a real `make dev` process,
 * so it cannot go stale: its `sh` blocks, in order, in one bash with `set -e`, in a directory
 * whose `.data/` is the process's data directory. The text is run as written: the ports come
 * from the variables it reads (PORT, SMTP_PORT, RECEIVER_PORT), as a person's shell would give
 * them, and its scratch files must stay under `.data/`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, pathWithoutBun, REPO, startDev, type DevProcess } from '../helpers/dev-process'

/** The fenced `sh` blocks of one `## ` section of a markdown text. */
export function shBlocks(markdown: string, section: string): string[] {
  const start = markdown.indexOf(`\n## ${section}\n`)
  if (start < 0) throw new Error(`no section "## ${section}"`)
  const rest = markdown.slice(start + 1)
  const end = rest.indexOf('\n## ', 1)
  const body = end < 0 ? rest : rest.slice(0, end)
  return [...body.matchAll(/```sh\n([\s\S]*?)```/g)].map(m => m[1]!)
}

describe('README walkthrough', () => {
  let dev: DevProcess
  beforeAll(async () => {
    dev = await startDev()
  }, 90_000) // the embedded database's cold start takes seconds, more on a busy machine
  afterAll(async () => {
    await dev?.stop()
  })

  test('the pasted blocks create an inbox, receive over SMTP with the long-poll, deliver to a webhook and reply', async () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8')
    const blocks = shBlocks(readme, 'Walkthrough')
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    const receiverPort = freePort()
    // the trap only cleans up after a failing run: a receiver still waiting, a long-poll still open
    const script = ['set -euo pipefail', `trap 'status=$?; kill $(jobs -p) 2>/dev/null || true; exit $status' EXIT`, ...blocks].join('\n')
    const run = Bun.spawn(['bash', '-c', script], {
      cwd: dev.dir,
      env: {
        PATH: pathWithoutBun(),
        HOME: process.env.HOME ?? dev.dir,
        PORT: String(dev.apiPort),
        SMTP_PORT: String(dev.smtpPort),
        RECEIVER_PORT: String(receiverPort),
      },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const timer = setTimeout(() => run.kill('SIGTERM'), 45_000)
    const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
    clearTimeout(timer)
    if (code !== 0) console.error(stdout, stderr, dev.output())
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines).toEqual([
      expect.stringMatching(/^agent-[a-z0-9]+@agents\.localhost$/),
      'Hello agent', // the long-poll's answer
      'email.received Hello agent', // what the webhook receiver printed
      'queued', // the reply
      'Re: Hello agent', // the reply in the local outbox
      expect.stringMatching(/^http:\/\/localhost:\d+\/console$/), // where the console is
    ])
    // the console answers there: its sign-in page, for the development owner
    const consolePage = await fetch(lines.at(-1)!.replace('localhost', '127.0.0.1'), { redirect: 'manual' })
    expect([consolePage.status, consolePage.headers.get('location')]).toEqual([303, '/console/sign-in'])
    // nothing left beside the data directory (the scratch files are in it)
    expect(readdirSync(dev.dir)).toEqual(['.data'])
    expect(readdirSync(dev.dataDir)).toEqual(expect.arrayContaining(['hello.eml', 'new-mail.json']))
  }, 60_000)
})
