/**
 * A scratch primary and a streaming replica of it, from the PostgreSQL binaries installed on this
 * machine: `initdb`, then `pg_basebackup -R` (which writes the standby's connection settings), each
 * cluster on a free port under a temporary folder, removed by `stop()`. As root, the binaries run
 * as the `postgres` user (initdb refuses root).
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const BIN_ROOT = '/usr/lib/postgresql'

/** The newest installed server's bin folder, or undefined where no server is installed. */
export function postgresBinaries(): string | undefined {
  if (!existsSync(BIN_ROOT)) return undefined
  const version = readdirSync(BIN_ROOT).sort((a, b) => Number(b) - Number(a))[0]
  const bin = version && join(BIN_ROOT, version, 'bin')
  return bin && existsSync(join(bin, 'pg_basebackup')) ? bin : undefined
}

const asRoot = process.getuid?.() === 0

function run(command: string[]): void {
  const argv = asRoot ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', ...command] : command
  const done = Bun.spawnSync(argv, { stdout: 'pipe', stderr: 'pipe' })
  if (done.exitCode !== 0) throw new Error(`${command.join(' ')} failed (${done.exitCode}): ${done.stderr.toString()}${done.stdout.toString()}`)
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

export interface ReplicaCluster {
  primaryUrl: string
  replicaUrl: string
  /** stops the replica at once (`pg_ctl stop -m immediate`), as a crash would */
  stopReplica(): void
  /** stops both clusters and removes their folders */
  stop(): void
}

export async function startReplicaCluster(): Promise<ReplicaCluster> {
  const bin = postgresBinaries()
  if (!bin) throw new Error(`no PostgreSQL server binaries under ${BIN_ROOT}`)
  const dir = mkdtempSync(join(tmpdir(), 'agent-mail-replica-'))
  if (asRoot)
    chownSync(dir, Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString()), Number(Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString()))
  const primary = join(dir, 'primary')
  const replica = join(dir, 'replica')
  const [primaryPort, replicaPort] = [await freePort(), await freePort()]
  const settings = (port: number) =>
    [`port = ${port}`, `listen_addresses = '127.0.0.1'`, `unix_socket_directories = '${dir}'`, 'fsync = off', 'max_connections = 50'].join('\n')
  const started: string[] = []
  const stop = (data: string, mode = 'fast') => {
    if (!started.includes(data)) return
    run([join(bin, 'pg_ctl'), '-D', data, '-m', mode, '-w', 'stop'])
    started.splice(started.indexOf(data), 1)
  }
  try {
    // trust on loopback, replication included (initdb's default pg_hba.conf has the replication lines)
    run([join(bin, 'initdb'), '-D', primary, '-U', 'postgres', '--auth=trust', '--no-sync'])
    writeFileSync(join(primary, 'postgresql.auto.conf'), `${settings(primaryPort)}\nwal_level = replica\nmax_wal_senders = 4\n`)
    run([join(bin, 'pg_ctl'), '-D', primary, '-l', join(dir, 'primary.log'), '-w', 'start'])
    started.push(primary)
    run([join(bin, 'pg_basebackup'), '-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', replica, '-R', '-X', 'stream', '--no-sync'])
    // -R appended primary_conninfo to postgresql.auto.conf; the port is the replica's own
    writeFileSync(join(replica, 'postgresql.auto.conf'), `${settings(replicaPort)}\nhot_standby = on\n`, { flag: 'a' })
    run([join(bin, 'pg_ctl'), '-D', replica, '-l', join(dir, 'replica.log'), '-w', 'start'])
    started.push(replica)
  } catch (error) {
    for (const data of [...started]) stop(data, 'immediate')
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    primaryUrl: `postgres://postgres@127.0.0.1:${primaryPort}/postgres`,
    replicaUrl: `postgres://postgres@127.0.0.1:${replicaPort}/postgres`,
    stopReplica: () => stop(replica, 'immediate'),
    stop() {
      for (const data of [...started]) stop(data, 'immediate')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
