/**
 * `agent-mail functions` as a subprocess: deploy a file (create, then redeploy by name; a broken
 * module reported with its line), list, and `logs --follow` printing what the function logged
 * when mail delivered over SMTP ran it (a real worker, a real sandbox).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createOrg, type TestOrg } from '../helpers/app'
import { managedAddress } from '../helpers/mail'
import { cliService, watch, type CliService } from './helpers'

let s: CliService
let org: TestOrg
let dir: string

beforeAll(async () => {
  s = await cliService({ worker: true })
  org = await createOrg()
  dir = mkdtempSync(join(tmpdir(), 'agent-mail-functions-'))
})
afterAll(() => s.stop())

const cli = (args: string[]) => s.cli(args, { env: { AGENT_MAIL_API_KEY: org.key } })
const file = (name: string, code: string) => {
  const path = join(dir, name)
  writeFileSync(path, code)
  return path
}

const GREETER = `export default {
  async fetch(request, env) {
    const event = await request.json()
    console.log('got', event.email.headers.subject)
    return new Response('ok')
  },
}
`

describe('agent-mail functions', () => {
  let id: string

  test('deploy creates the function named after the file, and redeploys it by that name', async () => {
    const path = file('greeter.js', GREETER)
    const first = await cli(['functions', 'deploy', path])
    expect(first.code).toBe(0)
    const match = /^Deployed greeter \(([0-9a-f-]{36})\), \d+(\.\d)? (B|KB)$/m.exec(first.stdout)
    expect(match).not.toBeNull()
    id = match![1]!
    const again = await cli(['functions', 'deploy', path, '--json'])
    expect(again.code).toBe(0)
    const redeployed = JSON.parse(again.stdout)
    expect(redeployed).toMatchObject({ id, name: 'greeter', deploy_status: 'deployed', deployment: { status: 'deployed' } })
    expect(redeployed.current_deployment_id).toBe(redeployed.deployment.id)
    const listed = await cli(['functions'])
    expect(listed.stdout).toMatch(/^name\s+status\s+routed\s+created\s+id\s*$/m)
    expect(listed.stdout).toMatch(new RegExp(`^greeter\\s+deployed\\s+no\\s+now\\s+${id}`, 'm'))
  })

  test('a broken module: deploy failed with the error and its line, exit 1; a missing file: exit 2', async () => {
    const broken = await cli(['functions', 'deploy', file('broken.js', 'export default {\n  async fetch( {\n'), '--name', 'broken'])
    expect(broken.code).toBe(1)
    expect(broken.stderr).toMatch(/^error: deploy failed: SyntaxError: .+ \(line \d+(:\d+)?\) \(deploy_failed\)$/m)
    const missing = await cli(['functions', 'deploy', join(dir, 'nowhere.js')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('nowhere.js: cannot read the file')
  })

  test('logs --follow prints the lines of an invocation that mail delivered over SMTP caused', async () => {
    const routed = await fetch(`${s.origin}/v1/functions/${id}/route`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ domain_id: null }),
    })
    expect(routed.status).toBe(200)
    const follow = s.spawn(['functions', 'logs', 'greeter', '--follow', '--json'], { env: { AGENT_MAIL_API_KEY: org.key } })
    const out = watch(follow.stdout as ReadableStream)
    // the first read is done (it found no line): what comes next, the follow loop prints
    await watch(follow.stderr as ReadableStream).until(/Following new lines/)
    expect(out.text).toBe('')
    const address = await managedAddress(s.ctx, org.orgId)
    await s.smtp({ from: 'sam@sender.example', to: address, subject: 'Hello function', text: 'hi' })
    await out.until(/got Hello function/)
    follow.kill()
    await follow.exited
    const line = JSON.parse(out.text.trim().split('\n').at(-1)!)
    expect(line).toMatchObject({ level: 'log', message: 'got Hello function', invocation_id: expect.any(String) })

    const once = await cli(['functions', 'logs', id])
    expect(once.code).toBe(0)
    expect(once.stdout).toMatch(/^\S+Z log\s+got Hello function$/m)
    const unknown = await cli(['functions', 'logs', 'no-such-function'])
    expect(unknown.code).toBe(4)
    expect(unknown.stderr).toContain('no function named no-such-function')
  }, 30_000)
})
