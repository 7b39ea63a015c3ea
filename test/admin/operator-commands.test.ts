/**
 * `bin/admin` as an operator runs it after `make dev`: with the Bun that make installed into
 * .tools/ (none on the PATH), on the embedded database, and while `make dev` holds that
 * database (the command runs inside the dev process) or another process holds it (refused,
 * nothing written).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmbeddedPostgres } from '../../src/db/embedded'
import { devEnv, pathWithoutBun, REPO, startDev } from '../helpers/dev-process'

const scratch: string[] = []
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true })
})

function tempDir(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  scratch.push(dir)
  return dir
}

async function admin(script: string, args: string[], env: Record<string, string | undefined>) {
  const proc = Bun.spawn([script, ...args], { env: devEnv(env), stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr, json: code === 0 ? JSON.parse(stdout) : undefined }
}

const adminScript = join(REPO, 'bin/admin')

describe('bin/admin', () => {
  test('runs with the Bun that make installed into .tools/ when none is on the PATH', async () => {
    // a checkout as `make dev` leaves it on a machine without Bun: Bun only under .tools/
    const root = tempDir('checkout-')
    for (const entry of ['bin', 'src', 'sql', 'node_modules', 'package.json', 'tsconfig.json']) symlinkSync(join(REPO, entry), join(root, entry))
    mkdirSync(join(root, '.tools/node_modules/.bin'), { recursive: true })
    symlinkSync(process.execPath, join(root, '.tools/node_modules/.bin/bun'))
    const env = { PATH: pathWithoutBun(), DATA_DIR: join(root, '.data') }
    expect(Bun.spawnSync(['sh', '-c', 'command -v bun'], { env: devEnv(env) }).exitCode).not.toBe(0)

    const created = await admin(join(root, 'bin/admin'), ['org', 'create', '--plan', 'developer', '--email', 'ops@example.com'], env)
    expect(created.stderr).toBe('')
    expect(created.code).toBe(0)
    expect(created.json).toMatchObject({ plan: 'developer', api_key: expect.stringMatching(/^svc_/) })

    const usage = await admin(join(root, 'bin/admin'), ['org', 'frobnicate'], env)
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('unknown command: org frobnicate')
    expect(usage.stderr).toContain('bin/admin org create --plan')
  }, 60_000)

  test('while make dev runs, the command runs inside it and its write is kept across a restart', async () => {
    const dev = await startDev()
    const env = { DATA_DIR: dev.dataDir, PATH: process.env.PATH }
    let restarted: Awaited<ReturnType<typeof startDev>> | undefined
    try {
      const created = await admin(adminScript, ['org', 'create', '--plan', 'power'], env)
      expect(created.stderr).toBe('')
      expect(created.code).toBe(0)
      const whoami = (port: number) => fetch(`http://127.0.0.1:${port}/v1/whoami`, { headers: { authorization: `Bearer ${created.json.api_key}` } })
      // the running service sees the organization at once: the write went to its database
      const live = await whoami(dev.apiPort)
      expect(live.status).toBe(200)
      expect(((await live.json()) as { data: { org_id: string } }).data.org_id).toBe(created.json.org_id)

      await dev.stop({ keep: true })
      restarted = await startDev({}, dev.dir)
      const after = await whoami(restarted.apiPort)
      expect(after.status).toBe(200)
      expect(((await after.json()) as { data: { org_id: string } }).data.org_id).toBe(created.json.org_id)
    } finally {
      await (restarted ?? dev).stop()
    }
  }, 150_000)

  test('a process holding the embedded database without taking commands makes bin/admin refuse and say what to do', async () => {
    const dataDir = join(tempDir('held-'), '.data')
    // this test process holds the database, as `bun src/index.ts` without DATABASE_URL would
    const held = await startEmbeddedPostgres(join(dataDir, 'pglite'), 0)
    try {
      const refused = await admin(adminScript, ['org', 'create', '--plan', 'developer'], { DATA_DIR: dataDir, PATH: process.env.PATH })
      expect(refused.code).toBe(1)
      expect(refused.stdout).toBe('')
      expect(refused.stderr).toContain(`in use by process ${process.pid}`)
      expect(refused.stderr).toContain('Nothing was changed. Stop that process and run this command again')
      expect(refused.stderr).not.toMatch(/\n\s+at /)
    } finally {
      await held.stop()
    }
    // released: the same command now opens the database itself
    const created = await admin(adminScript, ['org', 'create', '--plan', 'developer'], { DATA_DIR: dataDir, PATH: process.env.PATH })
    expect(created.code).toBe(0)
  }, 90_000)
})
