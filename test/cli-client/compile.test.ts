/**
 * `make cli`: the client compiled into one executable (bun build --compile) works on its own,
 * outside the repository: it talks to the service and exits with the codes the source does.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createOrg, type TestOrg } from '../helpers/app'
import { cliService, type CliService } from './helpers'

let s: CliService
let org: TestOrg
let dir: string

beforeAll(async () => {
  s = await cliService()
  org = await createOrg()
  dir = mkdtempSync(join(tmpdir(), 'agent-mail-compiled-'))
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await s.stop()
})

test('make cli builds one executable that runs from anywhere against the service', async () => {
  const out = join(dir, 'agent-mail')
  const build = Bun.spawn(['make', '-s', '-C', join(import.meta.dir, '../..'), 'cli', `CLI_OUT=${out}`], { stdout: 'pipe', stderr: 'pipe' })
  const [buildErr, built] = await Promise.all([new Response(build.stderr).text(), build.exited])
  expect({ code: built, stderr: built ? buildErr : '' }).toEqual({ code: 0, stderr: '' })
  expect(statSync(out).mode & 0o111).not.toBe(0)
  // from another directory, with no Bun on the PATH
  // (spawned, not spawnSync: the service answering it runs in this process)
  const run = async (args: string[], key: string) => {
    const p = Bun.spawn([out, ...args], {
      cwd: dir,
      env: { PATH: '/usr/bin:/bin', HOME: dir, AGENT_MAIL_URL: s.origin, AGENT_MAIL_API_KEY: key, NO_COLOR: '1' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
    return { code, stdout, stderr }
  }
  const me = await run(['whoami', '--json'], org.key)
  expect(me.code).toBe(0)
  expect(JSON.parse(me.stdout)).toMatchObject({ org_id: org.orgId })
  const bad = await run(['whoami'], 'svc_not_a_real_key')
  expect(bad.code).toBe(3)
  expect(bad.stderr).toContain('(unauthorized)')
}, 60_000)
