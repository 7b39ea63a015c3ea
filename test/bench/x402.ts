/**
 * x402 section of `make bench`: challenge-to-settled latency on anvil with Circle's USDC at
 * base-sepolia's address, the service running as its own process (api and worker roles,
 * direct JSON-RPC settlement).
 *
 * One payment = POST /v1/x402/challenges, the payer signing with the x402 reference client, and
 * POST /v1/x402/challenges/{id}/pay until the receipt (the transaction is mined: anvil mines
 * each transaction at once). Measured sequentially and with 20 payers at once. Beside it, in the
 * same run and on the same anvil: a bare viem round trip (sign the EIP-3009 authorization,
 * `transferWithAuthorization`, wait for the receipt).
 *
 * Target (printed, not asserted): our end-to-end p50 within 2x of the bare round trip.
 *
 * Then, as figures a shared machine's load moves less than latencies: the CPU time one payment
 * costs each process (the service, PostgreSQL's backends, anvil, this client), over 30 of ours
 * and then 30 bare round trips, sequentially.
 */
import { parseSignature, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createNonceManager, createTestClient, createWalletClient, http } from 'viem'
import { jsonRpc } from 'viem/nonce'
import type { Sql } from '../../src/db/client'
import { createOrgCommand, entitleCommand } from '../../src/admin/commands'
import { payoutStatement } from '../../src/x402/payout.service'
import { TOKEN_ABI, TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../src/x402/token'
import { networkInfo } from '../../src/x402/networks'
import { startChain } from '../x402/anvil'
import { signPayment } from '../x402/payer'
import { databaseCpu, databaseCpuSpent, freePort, percentile, processCpuMicros, startService, stopAll } from './common'

const SEQUENTIAL = Number(process.env.BENCH_X402_PAYMENTS ?? 60)
const CONCURRENT = 20
const ROUNDS = Number(process.env.BENCH_X402_ROUNDS ?? 3)
/** payments of each kind in the second part of the warm-up, half of them at once (see below) */
const WARM_PAYMENTS = Number(process.env.BENCH_X402_WARM_PAYMENTS ?? 200)
const AMOUNT = 1000n

const summary = (times: number[]) => {
  const sorted = times.toSorted((a, b) => a - b)
  return { n: sorted.length, p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99) }
}

export async function x402Bench(sql: Sql, dbUrl: string) {
  const chain = await startChain('base-sepolia')
  const children: Bun.Subprocess[] = []
  try {
    const port = await freePort()
    const service = await startService(children, {
      PORT: String(port),
      DATABASE_URL: dbUrl,
      ROLES: 'api,worker',
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      SECRET_KEY: 'bench-secret-key-0123456789abcdef-0123456789',
      LOG_LEVEL: 'warn',
      X402_RPC_URL_BASE_SEPOLIA: chain.url,
      X402_SETTLER_PRIVATE_KEY: chain.settlerKey,
    })
    const api = `http://127.0.0.1:${port}`
    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const res = await fetch(`${api}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const json = (await res.json()) as any
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json.error)}`)
      return json.data
    }

    const payee = await createOrgCommand(sql, { plan: 'developer', name: 'bench payee' })
    const payer = await createOrgCommand(sql, { plan: 'developer', name: 'bench payer' })
    for (const org of [payee, payer]) await entitleCommand(sql, org.org_id, 'x402_payments')
    const payTo = privateKeyToAccount(generatePrivateKey())
    const message = payoutStatement(payee.org_id, 'base-sepolia', payTo.address, new Date())
    await call('POST', '/v1/x402/payout-addresses', payee.api_key, {
      network: 'base-sepolia',
      address: payTo.address,
      message,
      signature: await payTo.signMessage({ message }),
    })

    const wallets = Array.from({ length: CONCURRENT }, () => generatePrivateKey())
    for (const w of wallets) await chain.mint(privateKeyToAccount(w).address, 10n ** 12n)

    // the sequential payments' parts, as the client sees them
    const parts = { create: [] as number[], sign: [] as number[], pay: [] as number[] }
    const onePayment = async (key: Hex, record = false) => {
      const started = performance.now()
      const challenge = await call('POST', '/v1/x402/challenges', payee.api_key, { amount: AMOUNT.toString(), network: 'base-sepolia' })
      const created = performance.now()
      const payment = await signPayment(key, challenge)
      const signed = performance.now()
      await call('POST', `/v1/x402/challenges/${challenge.id}/pay`, payer.api_key, { payment })
      const paid = performance.now()
      if (record) parts.create.push(created - started), parts.sign.push(signed - created), parts.pay.push(paid - signed)
      return paid - started
    }
    // The database's floor in the same run: one row inserted and committed (a durable commit
    // waits for its WAL flush, which a loaded disk makes the largest single cost). A payment
    // commits three times (the challenge; the claim with its job; the record).
    const commits: number[] = []
    await sql`create table if not exists bench_commit (id int)`
    const oneCommit = async () => {
      const started = performance.now()
      await sql`insert into bench_commit values (1)`
      commits.push(performance.now() - started)
    }

    // The bare round trip: the same kind of signature, sent straight to the token from a key of its
    // own (not the service's settler: two processes on one key would race for nonces), with viem's
    // writeContract and waitForTransactionReceipt. No transport retries: a retried send that had
    // gone through leaves a nonce gap.
    const info = networkInfo('base-sepolia')
    const senderKey = generatePrivateKey()
    const funding = await chain.deployer.sendTransaction({
      account: chain.deployer.account!,
      to: privateKeyToAccount(senderKey).address,
      value: 10n ** 20n,
      chain: null,
    })
    await chain.client.waitForTransactionReceipt({ hash: funding })
    const sender = createWalletClient({
      account: privateKeyToAccount(senderKey, { nonceManager: createNonceManager({ source: jsonRpc() }) }),
      transport: http(chain.url, { retryCount: 0 }),
    })
    const bare = async (key: Hex) => {
      const started = performance.now()
      const from = privateKeyToAccount(key)
      const now = Math.floor(Date.now() / 1000)
      const authorization = {
        from: from.address,
        to: payTo.address,
        value: AMOUNT,
        validAfter: BigInt(now - 600),
        validBefore: BigInt(now + 300),
        nonce: generatePrivateKey(),
      }
      const signature = await from.signTypedData({
        domain: { name: info.eip712.name, version: info.eip712.version, chainId: info.chainId, verifyingContract: info.usdc },
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message: authorization,
      })
      const { v, r, s } = parseSignature(signature)
      const a = authorization
      const hash = await sender.writeContract({
        address: info.usdc,
        abi: TOKEN_ABI,
        functionName: 'transferWithAuthorization',
        args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, s],
        chain: null,
      })
      await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 5 })
      return performance.now() - started
    }

    // Warm-up: connections, JIT, the first block, and the service's steady state. Its database pool
    // (10 connections) is used in turn, and postgres.js describes each statement new to a
    // connection in a round trip of its own before sending it: until every connection has met
    // every statement of a payment, payments pay up to a dozen extra round trips. A round of
    // concurrent payments opens and warms the whole pool.
    for (let i = 0; i < 5; i++) {
      await onePayment(wallets[0]!)
      await bare(wallets[0]!)
    }
    await Promise.all(wallets.map(w => onePayment(w)))
    await Promise.all(wallets.map(w => bare(w)))
    for (let i = 0; i < 10; i++) {
      await onePayment(wallets[i % CONCURRENT]!)
      await bare(wallets[i % CONCURRENT]!)
    }
    // Then the JIT. After these 35 payments the service's JavaScript is still being compiled: its
    // JIT threads took a third of its CPU during the measured rounds, which a running service
    // spends once, long before. Another WARM_PAYMENTS payments of each kind (at once and one by
    // one) let it settle. anvil slows as its chain grows, and the bare round trip asks it more
    // than we do, so the chain is then reverted to its state before them (with the two senders'
    // transaction counts kept, as the senders count on them): both sides are measured on the
    // chain the warm-up started with.
    const test = createTestClient({ mode: 'anvil', transport: http(chain.url, { retryCount: 0 }) })
    const snapshot = await test.snapshot()
    for (let i = 0; i < WARM_PAYMENTS / 2 / CONCURRENT; i++) {
      await Promise.all(wallets.map(w => onePayment(w)))
      await Promise.all(wallets.map(w => bare(w)))
    }
    for (let i = 0; i < WARM_PAYMENTS / 2; i++) {
      await onePayment(wallets[i % CONCURRENT]!)
      await bare(wallets[i % CONCURRENT]!)
    }
    const senders = [privateKeyToAccount(chain.settlerKey as Hex).address, privateKeyToAccount(senderKey).address]
    const counts = await Promise.all(senders.map(address => chain.client.getTransactionCount({ address, blockTag: 'pending' })))
    await test.revert({ id: snapshot })
    await Promise.all(senders.map((address, i) => test.setNonce({ address, nonce: counts[i]! })))
    const ours: number[] = []
    const theirs: number[] = []
    const oursConcurrent: number[] = []
    const theirsConcurrent: number[] = []
    // CPU time (us) of each process since a snapshot: the service (all its threads, and its main
    // thread, which runs every request), PostgreSQL's backends, anvil and this client; null without /proc
    const cpuSnapshot = async () => ({
      service: processCpuMicros(service.pid),
      service_main_thread: processCpuMicros(service.pid, service.pid),
      database: await databaseCpu(sql),
      anvil: processCpuMicros(chain.pid),
      client: process.cpuUsage(),
    })
    const cpuSince = async (before: Awaited<ReturnType<typeof cpuSnapshot>>) => {
      const after = await cpuSnapshot()
      const client = process.cpuUsage(before.client)
      const spent = (a: number | null, b: number | null) => (a === null || b === null ? null : b - a)
      return {
        service: spent(before.service, after.service),
        service_main_thread: spent(before.service_main_thread, after.service_main_thread),
        database: databaseCpuSpent(before.database, after.database),
        anvil: spent(before.anvil, after.anvil),
        client: client.user + client.system,
      }
    }
    type Spent = Awaited<ReturnType<typeof cpuSince>>
    const roundsCpu = { ours: [] as Spent[], bare: [] as Spent[], oursMs: 0, bareMs: 0 }
    /** Runs one round of 20 at once, adding its CPU and its wall time to the round totals of `who`. */
    const atOnce = async (who: 'ours' | 'bare', op: (w: Hex) => Promise<number>) => {
      const before = await cpuSnapshot()
      const started = performance.now()
      const times = await Promise.all(wallets.map(op))
      roundsCpu[`${who}Ms`] += performance.now() - started
      roundsCpu[who].push(await cpuSince(before))
      return times
    }
    for (let round = 0; round < ROUNDS; round++) {
      // alternated, so a slower moment of the machine hits both
      for (let i = 0; i < SEQUENTIAL / ROUNDS; i++) {
        ours.push(await onePayment(wallets[i % CONCURRENT]!, true))
        theirs.push(await bare(wallets[i % CONCURRENT]!))
        await oneCommit()
      }
      oursConcurrent.push(...(await atOnce('ours', w => onePayment(w))))
      theirsConcurrent.push(...(await atOnce('bare', bare)))
    }
    const seq = summary(ours)
    const bareSeq = summary(theirs)
    const conc = summary(oursConcurrent)
    const bareConc = summary(theirsConcurrent)
    console.log('\n== x402: challenge to settled on anvil (USDC FiatTokenV2_2), the service as its own process ==')
    console.log(JSON.stringify({ sequential: seq, bare_viem_sequential: bareSeq, ratio_p50: Math.round((seq.p50_ms / bareSeq.p50_ms) * 100) / 100 }))
    console.log(JSON.stringify({ concurrent_20: conc, bare_viem_concurrent_20: bareConc, ratio_p50: Math.round((conc.p50_ms / bareConc.p50_ms) * 100) / 100 }))
    // CPU per payment, each process apart (ms): ours, then the bare round trip, sequentially
    const CPU_RUNS = Number(process.env.BENCH_X402_CPU_RUNS ?? 30)
    const perPayment = (spent: Spent, n: number) =>
      Object.fromEntries(Object.entries(spent).map(([k, us]) => [k, us === null ? null : Math.round(us / n / 10) / 100]))
    const cpuOf = async (op: (w: Hex) => Promise<unknown>) => {
      const before = await cpuSnapshot()
      for (let i = 0; i < CPU_RUNS; i++) await op(wallets[i % CONCURRENT]!)
      return perPayment(await cpuSince(before), CPU_RUNS)
    }
    const cpuOurs = await cpuOf(w => onePayment(w))
    const cpuBare = await cpuOf(bare)
    const p50 = (v: number[]) => summary(v).p50_ms
    console.log(
      JSON.stringify({
        sequential_parts_p50_ms: { create_challenge: p50(parts.create), sign: p50(parts.sign), pay_to_receipt: p50(parts.pay) },
        database_commit_p50_ms: p50(commits),
      }),
    )
    console.log(JSON.stringify({ cpu_ms_per_payment: cpuOurs, bare_viem_cpu_ms_per_round_trip: cpuBare }))
    // with 20 at once: how busy each process kept the machine's cores over the rounds (1 = one core the whole time)
    const busy = (spent: Spent[], ms: number) =>
      Object.fromEntries(
        Object.keys(spent[0]!).map(k => {
          const values = spent.map(s => s[k as keyof Spent])
          return [k, values.includes(null) ? null : Math.round(((values as number[]).reduce((a, b) => a + b, 0) / 1000 / ms) * 100) / 100]
        }),
      )
    console.log(
      JSON.stringify({ cores_busy_at_once: busy(roundsCpu.ours, roundsCpu.oursMs), bare_viem_cores_busy_at_once: busy(roundsCpu.bare, roundsCpu.bareMs) }),
    )
    console.log('target: our end-to-end p50 within 2x of the bare viem round trip')
  } finally {
    await stopAll(children)
    chain.stop()
  }
}
