/**
 * Reads on a streaming replica (DATABASE_REPLICA_URL), against a real one: a scratch primary and
 * a replica made from it with pg_basebackup, from this machine's PostgreSQL binaries. Replay is
 * paused on the replica to make it lag on purpose: a read that shows the replica's older view
 * went to the replica, and one that shows the primary's went to the primary.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { connectUrl, openDatabase, type Sql } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { Replica } from '../../src/db/replica'
import { createOrg, TEST_SECRET, testApp, type TestApp } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { postgresBinaries, startReplicaCluster, type ReplicaCluster } from '../helpers/replica-cluster'
import { until } from '../helpers/until'

const MAX_LAG_MS = 3000

// CI has the server binaries (it runs PostgreSQL); a machine with only the embedded database skips
describe.skipIf(!postgresBinaries() && !process.env.CI)('reads on a streaming replica', () => {
  let cluster: ReplicaCluster
  let primary: Sql
  let replicaSql: Sql
  let replica: Replica
  let api: TestApp
  let writer: string
  let reader: string

  const inboxes = async (key: string) => expectOk(await api.request('GET', '/v1/inboxes?limit=100', { key })).map((i: { id: string }) => i.id)
  /** until the replica holds every commit made before now */
  const caughtUp = (since = Date.now()) => until(async () => replica.covers(since), Boolean)
  const pauseReplay = () => replicaSql`select pg_wal_replay_pause()`
  const resumeReplay = () => replicaSql`select pg_wal_replay_resume()`

  beforeAll(async () => {
    cluster = await startReplicaCluster()
    primary = connectUrl(cluster.primaryUrl)
    await migrate(primary)
    replicaSql = connectUrl(cluster.replicaUrl, 5, { connect_timeout: 2 })
    replica = new Replica(primary, replicaSql, MAX_LAG_MS).start()
    api = await testApp({}, { sql: primary, replica })
    const org = await createOrg({ sql: primary })
    writer = org.key
    reader = expectOk(await api.request('POST', '/v1/api-keys', { key: writer, body: { name: 'reader' } }), 201).key
    await caughtUp()
  }, 60_000)

  afterAll(async () => {
    await replica?.close()
    await primary?.end({ timeout: 5 })
    cluster?.stop()
  })

  test('a read goes to the replica, while the credential that wrote reads its own write on the primary', async () => {
    await pauseReplay()
    try {
      const created = expectOk(await api.request('POST', '/v1/inboxes', { key: writer, body: {} }), 201).id
      // the replica has not replayed the insert: the other credential's read shows the replica's view
      expect(await inboxes(reader)).not.toContain(created)
      // the one that wrote it sees it, on the primary
      expect(await inboxes(writer)).toContain(created)
      // GraphQL queries read on the replica too
      const graph = await api.request('POST', '/graphql', { key: reader, body: { query: '{ inboxes(first: 50) { nodes { id } } }' } })
      expect(graph.status).toBe(200)
      expect(graph.body.data.inboxes.nodes.map((n: { id: string }) => n.id)).not.toContain(created)
      await resumeReplay()
      // once the replica replays it, everyone reads it there
      await until(
        () => inboxes(reader),
        ids => ids.includes(created),
      )
    } finally {
      await resumeReplay()
    }
  })

  test('a replica further behind than REPLICA_MAX_LAG_MS serves no read', async () => {
    await pauseReplay()
    try {
      const created = expectOk(await api.request('POST', '/v1/inboxes', { key: writer, body: {} }), 201).id
      expect(await inboxes(reader)).not.toContain(created)
      await Bun.sleep(MAX_LAG_MS + 500)
      expect(await inboxes(reader)).toContain(created)
    } finally {
      await resumeReplay()
    }
  })

  test('the changes feed reads on the replica without going back: a cursor from the primary stays where it was', async () => {
    await caughtUp()
    const changes = async (cursor: string) => (await api.request('GET', `/v1/changes?cursor=${encodeURIComponent(cursor)}`, { key: reader })).body
    const head = (await api.request('GET', '/v1/changes', { key: reader })).body.meta.cursor
    await pauseReplay()
    try {
      expectOk(await api.request('PUT', '/v1/memories/progress', { key: writer, body: { value: 'step 2' } }))
      const page = await changes(head)
      expect(page.data).toEqual([])
      expect(page.meta.cursor).toBe(head)
    } finally {
      await resumeReplay()
    }
    const replayed = await until(
      async () => (await changes(head)).data,
      changes => changes.length > 0,
    )
    expect(replayed.map((c: { type: string }) => c.type)).toContain('memory.set')
  })

  test('with the replica stopped, reads are answered by the primary', async () => {
    const created = expectOk(await api.request('POST', '/v1/inboxes', { key: writer, body: {} }), 201).id
    await caughtUp()
    cluster.stopReplica()
    // at once, before the next check of the replica notices: the failed read runs again on the primary
    expect(await inboxes(reader)).toContain(created)
    const second = expectOk(await api.request('POST', '/v1/inboxes', { key: writer, body: {} }), 201).id
    expect(await inboxes(reader)).toContain(second)
    const graph = await api.request('POST', '/graphql', { key: reader, body: { query: '{ inboxes(first: 50) { nodes { id } } }' } })
    expect(graph.body.data.inboxes.nodes.map((n: { id: string }) => n.id)).toContain(second)
    expect(replica.covers(0)).toBe(false)
  })

  test('DATABASE_REPLICA_URL opens the replica beside the primary', async () => {
    const db = await openDatabase(
      loadConfig({ NODE_ENV: 'test', SECRET_KEY: TEST_SECRET, DATABASE_URL: cluster.primaryUrl, DATABASE_REPLICA_URL: cluster.primaryUrl }),
    )
    try {
      expect(db.replica).toBeDefined()
      // a primary given as the replica is not in recovery: it never serves reads
      await Bun.sleep(300)
      expect(db.replica!.covers(0)).toBe(false)
    } finally {
      await db.close()
    }
  })
})

test('DATABASE_REPLICA_URL without DATABASE_URL is refused', () => {
  expect(() => loadConfig({ DATABASE_REPLICA_URL: 'postgres://127.0.0.1:5433/x' })).toThrow(/DATABASE_REPLICA_URL/)
})
