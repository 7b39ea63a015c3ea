/**
 * `make image-check`: the production image as shipped, built from the Containerfile as
 * docs/operations.md says and run against the machine's PostgreSQL, with real clients:
 *
 * - the build keeps the HEALTHCHECK (docker format) and the image is under 250 MB;
 * - with its defaults (all roles, `--read-only`, its own network namespace, ports published)
 *   it reports healthy through its own HEALTHCHECK, runs as uid 1000, serves the OpenAPI
 *   document, runs `bin/admin`, takes mail over SMTP on its default port (2525, published) and
 *   sends mail out through a relay;
 * - with ROLES=worker and ROLES=smtp alone it reports healthy too;
 * - without DATABASE_URL it exits 2 naming the setting (the embedded database is not installed);
 * - `podman stop` with a long-poll open ends before the default stop timeout (10 s) with exit
 *   code 0, and the long-poll gets a real answer.
 *
 * What this machine needs and production does not (a containers.conf for podman, a CA bundle for
 * the build, the way to reach the host's PostgreSQL) is set here, never in the Containerfile:
 * see `machine` below and docs/operations.md. Progress goes to stdout; any failed check ends
 * the run with exit code 1 after removing its containers and scratch database.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import postgres from 'postgres'
import { startTestRelay } from '../helpers/relay'
import { freePort } from '../helpers/dev-process'

const root = join(import.meta.dir, '../..')
const startedAt = performance.now()
const IMAGE = process.env.IMAGE_CHECK_TAG ?? 'agent-mail'
const MAX_IMAGE_BYTES = 250e6
/** podman stop's default: SIGKILL after this long */
const STOP_TIMEOUT_MS = 10_000
const SECRET = Buffer.from(crypto.getRandomValues(new Uint8Array(36))).toString('base64')
const MANAGED_DOMAIN = 'agents.image-check.local'

const progress = (message: string) => console.log(`image-check [${((performance.now() - startedAt) / 1000).toFixed(1)}s] ${message}`)
class CheckFailed extends Error {}
function check(ok: unknown, what: string): asserts ok {
  if (!ok) throw new CheckFailed(what)
}

/** This machine's settings, none of them the image's (docs/operations.md, "Checking the image"). */
const machine = (() => {
  const scratch = mkdtempSync(join(tmpdir(), 'image-check-'))
  const env: Record<string, string> = { ...(process.env as Record<string, string>) }
  if (!env.CONTAINERS_CONF) {
    // crun refuses a hybrid cgroup layout (runc does not); and root without CAP_SYS_RESOURCE
    // cannot give a container podman's default limits (1048576 open files), so ask for what
    // this process has.
    const unified = statfsSync('/sys/fs/cgroup').type === 0x63677270
    const nofile = Number(Bun.spawnSync(['sh', '-c', 'ulimit -Hn']).stdout.toString()) || 4096
    const conf = ['[containers]', `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=16384:16384"]`, ...(unified ? [] : ['[engine]', 'runtime = "runc"'])]
    env.CONTAINERS_CONF = join(scratch, 'containers.conf')
    writeFileSync(env.CONTAINERS_CONF, `${conf.join('\n')}\n`)
  }
  // TLS to the npm registry is intercepted here: `bun install` in the build trusts the bundle
  // this machine's own tools use, mounted for the build only, with a bunfig naming it.
  const caBundle = process.env.IMAGE_CHECK_CA_BUNDLE ?? process.env.NODE_EXTRA_CA_CERTS ?? ''
  const buildMounts: string[] = []
  if (caBundle && existsSync(caBundle)) {
    writeFileSync(join(scratch, 'bunfig.toml'), '[install]\ncafile = "/run/image-check-ca.crt"\n')
    buildMounts.push('-v', `${caBundle}:/run/image-check-ca.crt:ro`, '-v', `${join(scratch, 'bunfig.toml')}:/root/.bunfig.toml:ro`)
  }
  return {
    scratch,
    env,
    buildMounts,
    // PostgreSQL listens on the host's loopback only: slirp4netns lets a container in its own
    // network namespace reach it as 10.0.2.2 (ports published as usual)
    network: process.env.IMAGE_CHECK_NETWORK ?? 'slirp4netns:allow_host_loopback=true',
    hostFromContainer: process.env.IMAGE_CHECK_HOST_ADDRESS ?? '10.0.2.2',
    adminDatabaseUrl: process.env.IMAGE_CHECK_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  }
})()

interface Ran {
  code: number
  stdout: string
  stderr: string
}

async function run(cmd: string[], opts: { allowFail?: boolean; timeoutMs?: number } = {}): Promise<Ran> {
  const proc = Bun.spawn(cmd, { cwd: root, env: machine.env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  const timer = opts.timeoutMs ? setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs) : undefined
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  if (code !== 0 && !opts.allowFail) throw new CheckFailed(`${cmd.join(' ')} exited ${code}:\n${stderr || stdout}`)
  return { code, stdout: stdout.trim(), stderr: stderr.trim() }
}
const podman = (args: string[], opts?: { allowFail?: boolean; timeoutMs?: number }) => run(['podman', ...args], opts)

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read().catch(() => undefined)
    if (value !== undefined) return value
    check(Date.now() < deadline, `${what} within ${timeoutMs / 1000} s`)
    await Bun.sleep(500)
  }
}

/** podman from Debian's packages, with the runtime and the user-mode network this check uses. */
async function installPodman() {
  if (Bun.which('podman') && Bun.which('slirp4netns')) return
  check(process.getuid?.() === 0, 'podman is missing and only root may install it: apt-get install podman runc slirp4netns')
  progress('installing podman from Debian packages')
  await run(['apt-get', 'update', '-qq'])
  await run(['apt-get', 'install', '-y', '-qq', 'podman', 'runc', 'slirp4netns'])
}

/** The Containerfile's base image: the published one when the registry answers, else the local stand-in. */
async function baseImage() {
  const base = /^FROM\s+(\S+)/m.exec(readFileSync(join(root, 'Containerfile'), 'utf8'))![1]!
  const qualified = base.includes('/') && base.split('/')[0]!.includes('.') ? base : `docker.io/${base}`
  const standIn = async () =>
    (await podman(['image', 'inspect', '--format', '{{ index .Labels "agent-mail.stand-in" }}', qualified], { allowFail: true })).stdout
  const present = (await podman(['image', 'exists', qualified], { allowFail: true })).code === 0
  if (present && !(await standIn())) return progress(`base image ${qualified}: the published one, present`)
  const pulled = await podman(['pull', '--quiet', qualified], { allowFail: true, timeoutMs: 60_000 })
  if (pulled.code === 0) return progress(`base image ${qualified}: pulled`)
  progress(`base image ${qualified}: the registry cannot be reached (${pulled.stderr.split('\n').at(-1)}); using a local STAND-IN`)
  const version = /bun:(\d+\.\d+\.\d+)/.exec(base)?.[1]
  check(version, `a Bun version in the base image's name (${base})`)
  const made = await run([join(import.meta.dir, 'stand-in-base.sh'), version, qualified])
  progress(
    made.stdout
      .split('\n')
      .at(-1)!
      .replace(/^image-check: /, ''),
  )
}

async function build() {
  progress(`building ${IMAGE} (podman build --format docker -f Containerfile .)`)
  const previous = (await podman(['image', 'inspect', '--format', '{{.Id}}', IMAGE], { allowFail: true })).stdout
  await podman(['build', '--format', 'docker', '--tag', IMAGE, '--file', 'Containerfile', ...machine.buildMounts, '.'])
  // the image this build replaced, so that runs do not pile images up (its cached layers stay)
  if (previous && previous !== (await podman(['image', 'inspect', '--format', '{{.Id}}', IMAGE])).stdout) await podman(['rmi', previous], { allowFail: true })
  const [inspected] = JSON.parse((await podman(['image', 'inspect', IMAGE])).stdout)
  check(inspected.Healthcheck?.Test?.length, 'the image keeps its HEALTHCHECK')
  check(inspected.Config?.User === 'bun', `the image runs as the user bun (is ${JSON.stringify(inspected.Config?.User)})`)
  const size = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).stdout)
  progress(`image size ${(size / 1e6).toFixed(0)} MB (at most ${MAX_IMAGE_BYTES / 1e6} MB)`)
  check(size < MAX_IMAGE_BYTES, `the image is under ${MAX_IMAGE_BYTES / 1e6} MB (is ${(size / 1e6).toFixed(0)} MB)`)
}

const containers: string[] = []

/** Starts a container of the image in its own network namespace, read-only, with the given settings. */
async function start(name: string, env: Record<string, string>, publish: string[] = []): Promise<string> {
  const full = `image-check-${process.pid}-${name}`
  await podman(['rm', '--force', '--ignore', full])
  containers.push(full)
  const args = ['run', '--detach', '--name', full, '--read-only', '--network', machine.network]
  for (const p of publish) args.push('--publish', p)
  for (const [k, v] of Object.entries(env)) args.push('--env', `${k}=${v}`)
  await podman([...args, IMAGE])
  return full
}

/** Runs the image's own HEALTHCHECK until it passes (podman runs it on demand where no systemd timer does). */
async function healthy(container: string) {
  await until(
    `${container} reports healthy`,
    async () => {
      const state = await podman(['inspect', '--format', '{{.State.Status}}', container])
      if (state.stdout !== 'running')
        throw new CheckFailed(`${container} is ${state.stdout}:\n${(await podman(['logs', container], { allowFail: true })).stderr}`)
      return (await podman(['healthcheck', 'run', container], { allowFail: true })).code === 0 ? true : undefined
    },
    60_000,
  )
  check((await podman(['inspect', '--format', '{{.State.Health.Status}}', container])).stdout === 'healthy', `${container}: health status healthy`)
}

async function main() {
  await installPodman()
  await baseImage()
  await build()

  const dbName = `image_check_${process.pid}`
  const admin = postgres(machine.adminDatabaseUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${dbName}`)
  const relay = await startTestRelay()
  try {
    const dbUrl = `postgres://postgres@${machine.hostFromContainer}:${new URL(machine.adminDatabaseUrl).port || 5432}/${dbName}`
    const env = { DATABASE_URL: dbUrl, SECRET_KEY: SECRET, MANAGED_DOMAIN, SMTP_HOSTNAME: 'mx.image-check.local' }
    const apiPort = freePort()
    const smtpPort = freePort()
    progress(`starting the image with its defaults, --read-only, ports ${apiPort}:3000 and ${smtpPort}:2525`)
    const main = await start(
      'all',
      { ...env, PUBLIC_URL: `http://127.0.0.1:${apiPort}`, SMTP_RELAY_URL: `smtp://${machine.hostFromContainer}:${relay.port}` },
      [`127.0.0.1:${apiPort}:3000`, `127.0.0.1:${smtpPort}:2525`],
    )
    await healthy(main)
    progress('healthy (the image HEALTHCHECK, all roles)')

    const uid = (await podman(['exec', main, 'sh', '-c', "awk '/^Uid:/ {print $2}' /proc/1/status"])).stdout
    check(uid !== '' && uid !== '0', `the service runs as a user other than root (uid ${uid})`)
    const write = await podman(['exec', main, 'sh', '-c', 'touch /app/written'], { allowFail: true })
    check(write.code !== 0 && /read-only/i.test(write.stderr), 'the root file system is read-only')
    progress(`service uid ${uid}; root file system read-only`)

    const api = `http://127.0.0.1:${apiPort}`
    const openapi = (await (await fetch(`${api}/v1/openapi`)).json()) as { openapi: string; paths: Record<string, unknown> }
    check(openapi.openapi?.startsWith('3.1') && openapi.paths['/v1/health'] && openapi.paths['/v1/inboxes'], 'the OpenAPI document is served')
    progress(`OpenAPI ${openapi.openapi} served (${Object.keys(openapi.paths).length} paths)`)

    const created = await podman(['exec', main, 'bin/admin', 'org', 'create', '--plan', 'developer', '--email', 'ops@image-check.local'])
    const org = JSON.parse(created.stdout) as { org_id: string; api_key: string }
    check(org.api_key?.startsWith('svc_'), `bin/admin org create prints an API key (${created.stdout})`)
    progress(`bin/admin inside the container created organization ${org.org_id}`)

    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${api}${path}`, {
        method,
        headers: { authorization: `Bearer ${org.api_key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      })
      return { status: response.status, body: (await response.json()) as { success: boolean; data: any } }
    }
    const inbox = await call('POST', '/v1/inboxes', { local_part: 'checker' })
    check(inbox.status === 201, `POST /v1/inboxes: 201 (got ${inbox.status} ${JSON.stringify(inbox.body)})`)
    const address = inbox.body.data.address as string

    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, name: 'client.image-check.local' })
    const sent = await transport.sendMail({ from: 'someone@elsewhere.example', to: address, subject: 'in through the published port', text: 'hello' })
    transport.close()
    check(/^250/.test(sent.response), `SMTP on the default port accepted the message (${sent.response})`)
    const received = await call('GET', `/v1/emails?inbox_id=${inbox.body.data.id}&wait=20`)
    check(received.body.data?.[0]?.subject === 'in through the published port', `the message arrived (${JSON.stringify(received.body)})`)
    progress(`mail in: SMTP on the image default port 2525 (published as ${smtpPort}) stored for ${address}`)

    const out = await call('POST', '/v1/send-mail', { from: address, to: 'reader@outside.example', subject: 'out through the relay', body_text: 'hi' })
    check(out.status < 300, `POST /v1/send-mail succeeds (got ${out.status} ${JSON.stringify(out.body)})`)
    const [relayed] = await relay.waitFor(1, 20_000)
    check(relayed?.to.includes('reader@outside.example') && /^DKIM-Signature:/im.test(relayed.raw), 'the relay received the DKIM-signed message')
    progress('mail out: a DKIM-signed message reached the relay outside the container')

    for (const role of ['worker', 'smtp']) {
      const alone = await start(role, { ...env, ROLES: role })
      await healthy(alone)
      progress(`healthy with ROLES=${role} (the same HEALTHCHECK, its health listener on PORT)`)
      await podman(['rm', '--force', '--time', '0', alone])
    }

    const bare = await start('no-database', { SECRET_KEY: SECRET })
    const exit = await until(
      'the container without DATABASE_URL exits',
      async () => {
        const state = (await podman(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', bare])).stdout.split(' ')
        return state[0] === 'exited' ? Number(state[1]) : undefined
      },
      30_000,
    )
    const said = (await podman(['logs', bare])).stderr
    check(exit === 2 && /DATABASE_URL: got nothing/.test(said), `without DATABASE_URL: exit 2 naming the setting (exit ${exit}: ${said})`)
    progress('without DATABASE_URL: exit 2, "DATABASE_URL: got nothing" (no embedded database in the image)')

    progress('podman stop with a long-poll open')
    const longPoll = fetch(`${api}/v1/emails?inbox_id=${inbox.body.data.id}&since=${new Date().toISOString()}&wait=60`, {
      headers: { authorization: `Bearer ${org.api_key}` },
    }).then(async r => ({ status: r.status, body: await r.text() }))
    await Bun.sleep(1_000)
    const stopAt = performance.now()
    await podman(['stop', main])
    const stopMs = performance.now() - stopAt
    const exitCode = Number((await podman(['inspect', '--format', '{{.State.ExitCode}}', main])).stdout)
    const answer = await longPoll.catch(error => ({ status: 0, body: String(error) }))
    progress(`stopped in ${(stopMs / 1000).toFixed(1)} s, exit code ${exitCode}; the long-poll got ${answer.status} ${answer.body.slice(0, 80)}`)
    check(stopMs < STOP_TIMEOUT_MS, `podman stop finishes under its default timeout (${STOP_TIMEOUT_MS / 1000} s)`)
    check(exitCode === 0, 'the service exits 0 on SIGTERM')
    check(answer.status === 200 && JSON.parse(answer.body).success === true, 'the open long-poll is answered (200, the envelope)')
  } finally {
    await relay.stop()
    await podman(['rm', '--force', '--ignore', '--time', '0', ...containers], { allowFail: true })
    await admin.unsafe(`drop database if exists ${dbName} with (force)`).catch(() => {})
    await admin.end()
  }
}

try {
  await main()
  progress('passed')
} catch (error) {
  console.error(`image-check: FAILED: ${error instanceof CheckFailed ? error.message : error instanceof Error ? error.stack : error}`)
  process.exitCode = 1
} finally {
  rmSync(machine.scratch, { recursive: true, force: true })
}
