/**
 * Shared parts of the email-native x402 tests: reading the interaction.json steps an organization
 * received, building payment steps, running the step jobs as a worker would, and an outside payer
 * whose replies arrive over the SMTP listener signed with keys published in the harness's DNS.
 */
import { generateKeyPairSync } from 'node:crypto'
import { join } from 'node:path'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dkimSign } from 'mailauth/lib/dkim/sign'
import { testSql } from '../../helpers/app'
import { testDatabase } from '../../helpers/database'
import { devEnv, REPO } from '../../helpers/dev-process'
import type { InboundHarness } from '../../helpers/mail'
import { runNow } from '../../../src/jobs/run'
import { attachmentContents } from '../../../src/mail/inbound/parse'
import { inboundStepJob } from '../../../src/x402/email/inbound'
import { STEP_KIND } from '../../../src/x402/email/step-mail'
import { signPayment } from '../payer'

export const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64')

/** Runs the pending step jobs (what a worker would), all at once. */
export async function runStepJobs(t: InboundHarness) {
  const sql = await testSql()
  const jobs = await sql<{ id: string }[]>`select id from jobs where kind = ${STEP_KIND} and locked_by is null and attempts = 0`
  await Promise.all(jobs.map(j => runNow(t.ctx, inboundStepJob, j.id)))
}

/** The interaction.json parts of the mail an organization received, oldest first. */
export async function stepsReceived(orgId: string) {
  const sql = await testSql()
  const rows = await sql<{ id: string; raw: Buffer }[]>`
    select e.id, c.raw from emails e join email_contents c on c.email_id = e.id
     where e.org_id = ${orgId} and e.direction = 'inbound' order by e.received_at, e.id`
  const out: { emailId: string; step: any }[] = []
  for (const r of rows) {
    const part = (await attachmentContents(new Uint8Array(r.raw))).find(a => a.filename === 'interaction.json')
    if (part) out.push({ emailId: r.id, step: JSON.parse(new TextDecoder().decode(part.content)) })
  }
  return out
}

/** A payment step answering `challenge` (the challenge step as received). */
export function paymentStep(challenge: any, payment: unknown, overrides: Record<string, unknown> = {}) {
  return {
    interaction_version: 1,
    interaction_id: challenge.interaction_id,
    protocol: 'x402.payment',
    protocol_version: 1,
    step: 'payment',
    step_id: crypto.randomUUID(),
    prev_step_id: challenge.step_id,
    expires_at: null,
    payload: { payment },
    ...overrides,
  }
}

/** The payer's authorization for a challenge step, signed with the x402 client. */
export const signedFor = (payerKey: `0x${string}`, challengeStep: any, edit?: (a: Record<string, string>) => void) =>
  signPayment(
    payerKey,
    { payment_requirements: challengeStep.payload.payment_requirements, authorization_nonce: challengeStep.payload.authorization_nonce },
    edit,
  )

/** `bin/admin x402 set-caps` as the operator runs it: a real process on the run's database. */
export async function adminSetCaps(orgId: string, daily: string, monthly: string, perSettle: string) {
  const { url } = await testDatabase()
  const env = devEnv({ DATABASE_URL: url, SECRET_KEY: 'x402-test-secret-key-0123456789abcdef', DATA_DIR: mkdtempSync(join(tmpdir(), 'x402-admin-')) })
  const proc = Bun.spawn([join(REPO, 'bin/admin'), 'x402', 'set-caps', orgId, daily, monthly, perSettle], { env, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`bin/admin x402 set-caps exited with ${code}: ${stderr}`)
  return JSON.parse(stdout) as { org_id: string; daily: string; monthly: string; per_settle: string }
}

/**
 * A payer outside this service: `address` at `domain`, whose replies come in over the SMTP
 * listener, signed (or not) with DKIM keys published in the harness's DNS for `domain` and the
 * `extraDomains` (siblings, parents, subdomains).
 */
export function outsidePayer(t: InboundHarness, address: string, extraDomains: string[] = []) {
  const domain = address.slice(address.indexOf('@') + 1)
  const keys: Record<string, string> = {}
  for (const d of [domain, ...extraDomains]) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    t.dns[`sel._domainkey.${d}`] = { TXT: [[`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]] }
    keys[d] = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  }
  return {
    /** the challenge message as it left for this payer: its Message-ID and its step */
    async challenge(): Promise<{ messageId: string; step: any }> {
      const sql = await testSql()
      const [out] = await sql<
        { raw: string; message_id: string }[]
      >`select raw, message_id from outbox_messages where rcpt = ${address} order by created_at desc limit 1`
      const part = (await attachmentContents(new TextEncoder().encode(out!.raw))).find(a => a.filename === 'interaction.json')!
      return { messageId: out!.message_id, step: JSON.parse(new TextDecoder().decode(part.content)) }
    },
    /** a reply carrying `step`, threaded to `inReplyTo` when given */
    message(to: string, step: unknown, inReplyTo?: string) {
      const boundary = 'b1'
      return [
        `From: ${address}`,
        `To: ${to}`,
        'Subject: payment',
        `Message-ID: <${crypto.randomUUID()}@${domain}>`,
        ...(inReplyTo ? [`In-Reply-To: ${inReplyTo}`] : []),
        'MIME-Version: 1.0',
        `Content-Type: multipart/mixed; boundary="${boundary}"`,
        '',
        `--${boundary}`,
        'Content-Type: text/plain',
        '',
        'paying',
        `--${boundary}`,
        'Content-Type: application/json; name="interaction.json"',
        'Content-Disposition: attachment; filename="interaction.json"',
        'Content-Transfer-Encoding: base64',
        '',
        b64(step),
        `--${boundary}--`,
        '',
      ].join('\r\n')
    },
    /** `raw` with a DKIM signature of `signingDomain` prepended (relaxed/relaxed; optionally its header list and a body length tag) */
    async sign(raw: string, signingDomain = domain, opts: { headerList?: string; maxBodyLength?: number } = {}) {
      const signature = {
        signingDomain,
        selector: 'sel',
        privateKey: keys[signingDomain],
        ...(opts.maxBodyLength !== undefined && { maxBodyLength: opts.maxBodyLength }),
      }
      return (
        (
          await dkimSign(raw, {
            canonicalization: 'relaxed/relaxed',
            ...(opts.headerList && { headerList: opts.headerList }),
            signatureData: [signature],
          } as never)
        ).signatures + raw
      )
    },
    deliver: (to: string, raw: string) => t.transport.sendMail({ envelope: { from: address, to: [to] }, raw }),
  }
}
