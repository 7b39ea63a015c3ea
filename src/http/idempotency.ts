/**
 * Idempotency-Key (convention 5). The action and the record of its result are written in one
 * transaction, so a crash leaves either both or neither: a retry then either replays the stored
 * result or performs the action for the first time. A transaction-scoped advisory lock on the
 * key makes a concurrent duplicate fail fast with `409 conflict` instead of waiting.
 */
import type { Sql, Tx } from '../db/client'
import { sha256, type ServerKeys } from '../crypto'
import { errors } from '../errors'
import { lookupRecord, recordOutcome, type StoredRecord, tryKeyLock } from './idempotency-queries'
const KEY_HEADER = 'idempotency-key'

export interface Outcome<T> {
  status: number
  data: T
}

export interface IdempotentRequest {
  /** who the key belongs to and what it is for: `org:<id>:<operation>` or `ip:<address>:<operation>` */
  scope: string
  /** the client's Idempotency-Key header, if any */
  key: string | null | undefined
  /** the request payload the key is bound to */
  payload: unknown
  /** sha256 of `canonicalJson(payload)`, when the caller has it already */
  payloadHash?: Buffer
}

/** JSON with object keys sorted, so the same payload always hashes the same. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map(k => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  )
}

export function idempotencyKeyOf(headers: Record<string, string | undefined>): string | undefined {
  const key = headers[KEY_HEADER]
  if (key === undefined) return undefined
  if (key.length < 1 || key.length > 255) throw errors.validation('Idempotency-Key', 'must be 1 to 255 characters')
  return key
}

/** The answer to a request whose key another request holds (its action is running). */
export const idempotencyBusy = () =>
  errors.conflict('Idempotency-Key: a request with this key is still in progress; retry shortly', { reason: 'idempotency_request_in_progress' })

/** The recorded outcome, for a request of the same payload; 409 for another payload under the key. */
function replay<T>(keys: ServerKeys, stored: StoredRecord, requestHash: string): Outcome<T> {
  if (stored.request_hash !== requestHash)
    throw errors.conflict('Idempotency-Key: already used with a different request payload', { reason: 'idempotency_key_reused' })
  return { status: stored.response_status, data: JSON.parse(keys.decrypt(stored.response_sealed)) as T }
}

/**
 * The recorded outcome of (scope, key) when there is one, for an action that records its own
 * outcome with `recordResponses` once done (a batch, whose parts are each idempotent already).
 */
export async function recordedOutcome<T>(sql: Sql, keys: ServerKeys, scope: string, key: string, requestHash: Buffer): Promise<Outcome<T> | undefined> {
  const [stored] = await lookupRecord(sql, scope, key)
  return stored ? replay<T>(keys, stored, requestHash.toString('hex')) : undefined
}

/** An action's outcome, and what it hands back to its caller alone. */
export interface PendingOutcome<T, L = undefined> extends Outcome<T> {
  /**
   * Given back to the caller as `local` (never recorded under the key, so absent on a replay):
   * a value, or the promise of statements the action sent and has not waited for, which the
   * key's record then follows in the same round trip.
   */
  local?: L | Promise<L>
}

/**
 * Runs `action` at most once per (scope, key). Returns the outcome, whether it was replayed, and
 * the action's `local`. Without a key the action simply runs in a transaction.
 */
export async function idempotent<T, L = undefined>(
  sql: Sql,
  keys: ServerKeys,
  req: IdempotentRequest,
  action: (tx: Tx) => Promise<PendingOutcome<T, L>>,
): Promise<Outcome<T> & { replayed: boolean; local?: L }> {
  const key = req.key
  if (!key) {
    return sql.begin(async tx => {
      const { local, ...outcome } = await action(tx)
      return { ...outcome, replayed: false, local: await local }
    })
  }
  const requestHash = (req.payloadHash ?? sha256(canonicalJson(req.payload))).toString('hex')
  return sql.begin(async tx => {
    // The statements go out in one round trip and run in order, so the lookup takes its snapshot
    // once the lock is held and sees the record of a holder that has just committed. (Folded into
    // one statement it would not: the snapshot would be taken before the lock.)
    const lock = tryKeyLock(tx, req.scope + '\n' + key).execute()
    const lookup = lookupRecord(tx, req.scope, key).execute()
    const [[locked], [stored]] = await Promise.all([lock, lookup])
    if (!locked!.locked) throw idempotencyBusy()
    if (stored) return { ...replay<T>(keys, stored, requestHash), replayed: true }
    const { local, ...outcome } = await action(tx)
    const record = recordOutcome(tx, {
      scope: req.scope,
      key,
      requestHash,
      status: outcome.status,
      sealed: keys.encrypt(JSON.stringify(outcome.data)),
    }).execute()
    const [written] = await Promise.all([local, record])
    return { ...outcome, replayed: false, local: written }
  })
}

/** Sets the status and the Idempotency-Key response header of an idempotent outcome. */
export function applyOutcome<T>(
  set: { status?: number | string; headers: Record<string, string | number | string[]> },
  key: string | null | undefined,
  outcome: Outcome<T> & { replayed: boolean },
): T {
  set.status = outcome.status
  if (key) set.headers['idempotency-key'] = key
  if (outcome.replayed) set.headers['idempotent-replayed'] = 'true'
  return outcome.data
}
