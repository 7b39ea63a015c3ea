import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import nodemailer from 'nodemailer'
import { createOrg, testSql, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, rfc822, senderDomain, type InboundHarness } from '../helpers/mail'
import { signDownloadToken } from '../../src/emails/download-token'
import { EMAILS_CHANNEL } from '../../src/mail/events'
import { inboundCommits } from '../../src/mail/inbound/ingest'
import { testDatabase } from '../helpers/database'

const embedded = (await testDatabase()).kind === 'pglite'

let h: InboundHarness
let alice: TestOrg
let aliceAddress: string
let bob: TestOrg
let bobAddress: string

beforeAll(async () => {
  h = await inboundHarness()
  alice = await createOrg({ plan: 'developer' })
  aliceAddress = await managedAddress(h.ctx, alice.orgId)
  bob = await createOrg({ plan: 'developer' })
  bobAddress = await managedAddress(h.ctx, bob.orgId)
})
afterAll(() => h.stop())

async function latest(org: TestOrg) {
  const list = await h.request('GET', '/v1/emails?limit=1', { key: org.key })
  expect(list.status).toBe(200)
  return list.body.data[0]
}

async function full(org: TestOrg, id: string) {
  const res = await h.request('GET', `/v1/emails/${id}`, { key: org.key })
  expect(res.status).toBe(200)
  return res.body.data
}

/**
 * Holds an organization's row in a transaction of its own until the returned release: a batch
 * storing mail for that organization waits on the lock (`waiting` resolves once it does), and
 * what arrives meanwhile queues for the next batch. Needs a second connection.
 */
async function holdOrgRow(orgId: string) {
  const sql = await testSql()
  let release!: () => void
  let locked!: () => void
  const isLocked = new Promise<void>(resolve => (locked = resolve))
  const holder = sql.begin(async tx => {
    await tx`select from orgs where id = ${orgId} for update`
    locked()
    await new Promise<void>(resolve => (release = resolve))
  })
  await isLocked
  return {
    async waiting() {
      while (!(await sql`select from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length) await Bun.sleep(5)
    },
    async release() {
      release()
      await holder
    },
  }
}

/** A message from sam@sender.example, ready for `ingest`. */
const inbound = (to: string, headers: Record<string, string>) => ({
  raw: new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: to, ...headers }, 'x\n')),
  mailFrom: 'sam@sender.example',
  rcptTo: [to],
  remoteIp: '127.0.0.1',
  tls: false,
})

describe('delivery over SMTP with nodemailer', () => {
  test('a message to a managed inbox is stored and readable', async () => {
    const info = await h.transport.sendMail({ from: 'Sam <sam@sender.example>', to: aliceAddress, subject: 'Hello agent', text: 'First line\nSecond line' })
    expect(info.accepted).toEqual([aliceAddress])
    expect(info.response).toStartWith('250')
    const summary = await latest(alice)
    expect(summary).toMatchObject({ direction: 'inbound', event_type: 'email.received', subject: 'Hello agent', from: { address: 'sam@sender.example', name: 'Sam' }, to: [{ address: aliceAddress }] })
    const email = await full(alice, summary.id)
    expect(email.text.trim()).toBe('First line\nSecond line')
    expect(email.message_id).toBe(info.messageId)
    expect(email.envelope).toMatchObject({ mail_from: 'sam@sender.example', rcpt_to: [aliceAddress], remote_ip: '127.0.0.1', helo: 'client.sender.example', tls: false })
    expect(email.authentication.spf.result).toBe('none')
    expect(email.headers[0]).toMatchObject({ name: 'received' })
  })

  test('a NUL byte in a decoded body or header is dropped from the parsed fields; the raw bytes keep it', async () => {
    const raw = rfc822(
      { From: 'sam@sender.example', To: aliceAddress, Subject: '=?utf-8?Q?nul=00here?=', 'Content-Type': 'text/plain; charset=utf-8', 'Content-Transfer-Encoding': 'quoted-printable' },
      'before=00after\n',
    )
    const info = await h.transport.sendMail({ envelope: { from: 'sam@sender.example', to: [aliceAddress] }, raw })
    expect(info.response).toStartWith('250')
    const email = await full(alice, (await latest(alice)).id)
    expect(email.subject).toBe('nulhere')
    expect(email.text.trim()).toBe('beforeafter')
    const stored = await h.request('GET', `/v1/emails/${email.id}/raw`, { key: alice.key })
    expect(String(stored.body)).toContain('before=00after')
  })

  test('several recipients in two organizations: one copy each, unknown ones refused', async () => {
    const ghost = `ghost-${crypto.randomUUID()}@${h.ctx.config.MANAGED_DOMAIN}`
    const info = await h.transport.sendMail({ from: 'sam@sender.example', to: [aliceAddress, ghost, bobAddress], subject: 'To both', text: 'x' })
    expect(info.accepted.sort()).toEqual([aliceAddress, bobAddress].sort())
    expect(info.rejected).toEqual([ghost])
    expect((info as { rejectedErrors?: { response: string }[] }).rejectedErrors?.[0]?.response).toStartWith('550 5.1.1')
    const a = await latest(alice)
    const b = await latest(bob)
    expect(a.subject).toBe('To both')
    expect(b.subject).toBe('To both')
    expect(a.id).not.toBe(b.id)
    expect((await full(alice, a.id)).envelope.rcpt_to).toEqual([aliceAddress])
  })

  test('a domain we do not host is relaying: 550 5.7.1', async () => {
    const err = await h.transport.sendMail({ from: 'sam@sender.example', to: 'someone@elsewhere.example', subject: 'x', text: 'x' }).catch((e: { response?: string }) => e)
    expect(String(err.response)).toStartWith('550 5.7.1')
  })

  test('attachments: metadata in reads and a real tar.gz download', async () => {
    await h.transport.sendMail({
      from: 'sam@sender.example',
      to: aliceAddress,
      subject: 'Files',
      text: 'see attached',
      attachments: [
        { filename: 'notes.txt', content: 'hello notes', contentType: 'text/plain' },
        { filename: 'data.bin', content: Buffer.from([0, 1, 2, 3, 255]), contentType: 'application/octet-stream', cid: 'data@x' },
      ],
    })
    const summary = await latest(alice)
    expect(summary.attachment_count).toBe(2)
    const email = await full(alice, summary.id)
    expect(email.attachments.map((a: { filename: string; size_bytes: number; content_type: string }) => [a.filename, a.size_bytes, a.content_type])).toEqual([
      ['notes.txt', 11, 'text/plain'],
      ['data.bin', 5, 'application/octet-stream'],
    ])
    const res = await h.app.handle(new Request(`http://api.test.local/v1/emails/${summary.id}/attachments.tar.gz`, { headers: { authorization: `Bearer ${alice.key}` } }))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/gzip')
    const tar = Bun.gunzipSync(new Uint8Array(await res.arrayBuffer()))
    const files = untar(tar)
    expect(files.map(f => f.name)).toEqual(['notes.txt', 'data.bin'])
    expect(new TextDecoder().decode(files[0]!.content)).toBe('hello notes')
    expect([...files[1]!.content]).toEqual([0, 1, 2, 3, 255])
  })

  test('the raw download is the exact bytes sent, after our Received: trace header', async () => {
    const sent = rfc822({ From: 'sam@sender.example', To: aliceAddress, Subject: 'Exact', 'Message-ID': `<${crypto.randomUUID()}@sender.example>` }, '.leading dot\n..two dots\nünïcödé 8-bit\n')
    await h.transport.sendMail({ envelope: { from: 'sam@sender.example', to: [aliceAddress] }, raw: sent })
    const summary = await latest(alice)
    const res = await h.app.handle(new Request(`http://api.test.local/v1/emails/${summary.id}/raw`, { headers: { authorization: `Bearer ${alice.key}` } }))
    expect(res.headers.get('content-type')).toBe('message/rfc822')
    const raw = Buffer.from(await res.arrayBuffer())
    const trace = raw.subarray(0, raw.indexOf('\r\n', raw.indexOf('\r\n;') >= 0 ? 0 : 0)).toString()
    expect(trace).toStartWith('Received: from client.sender.example ([127.0.0.1])')
    expect(raw.subarray(raw.length - Buffer.byteLength(sent)).equals(Buffer.from(sent))).toBe(true)
    const email = await full(alice, summary.id)
    expect(email.text).toBe('.leading dot\n..two dots\nünïcödé 8-bit\n')
    expect(summary.size_bytes).toBe(raw.length)
  })

  test('a DKIM-signed message is verified against DNS: dkim, spf and dmarc pass', async () => {
    const signer = senderDomain(h.dns, 'signed.example')
    const message = await signer.sign(rfc822({ From: 'Pay <pay@signed.example>', To: aliceAddress, Subject: 'Signed', 'Message-ID': '<signed-1@signed.example>' }, 'authentic\n'))
    await h.transport.sendMail({ envelope: { from: 'pay@signed.example', to: [aliceAddress] }, raw: message })
    const email = await full(alice, (await latest(alice)).id)
    expect(email.authentication.dkim).toEqual([
      { result: 'pass', domain: 'signed.example', selector: 'sel', aligned: true, signed_headers: expect.arrayContaining(['from', 'to', 'subject']) },
    ])
    expect(email.authentication.spf).toEqual({ result: 'pass', domain: 'signed.example' })
    expect(email.authentication.dmarc).toMatchObject({ result: 'pass', policy: 'reject', domain: 'signed.example' })
  })

  test('a tampered signed message does not pass DKIM and fails DMARC', async () => {
    const signer = senderDomain(h.dns, 'tamper.example')
    const message = await signer.sign(rfc822({ From: 'pay@tamper.example', To: aliceAddress, Subject: 'Signed' }, 'original body\n'))
    await h.transport.sendMail({ envelope: { from: 'someone@other.example', to: [aliceAddress] }, raw: message.replace('original body', 'changed body') })
    const email = await full(alice, (await latest(alice)).id)
    expect(email.authentication.dkim[0].result).not.toBe('pass')
    expect(email.authentication.dmarc.result).toBe('fail')
  })
})

describe('machine mail is classified', () => {
  test('a delivery status notification is email.bounced', async () => {
    const boundary = 'b1'
    const dsn = rfc822(
      { From: 'MAILER-DAEMON@sender.example', To: aliceAddress, Subject: 'Undelivered Mail Returned to Sender', 'MIME-Version': '1.0', 'Content-Type': `multipart/report; report-type=delivery-status; boundary="${boundary}"` },
      `--${boundary}\nContent-Type: text/plain\n\nDelivery failed.\n--${boundary}\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.sender.example\n\nFinal-Recipient: rfc822; nobody@sender.example\nAction: failed\nStatus: 5.1.1\n--${boundary}--\n`,
    )
    await h.transport.sendMail({ envelope: { from: '', to: [aliceAddress] } as never, raw: dsn })
    const summary = await latest(alice)
    expect(summary.event_type).toBe('email.bounced')
    expect((await full(alice, summary.id)).envelope.mail_from).toBe('')
  })

  test('a DMARC aggregate report is email.dmarc_report', async () => {
    await h.transport.sendMail({
      from: 'noreply-dmarc@reporter.example',
      to: aliceAddress,
      subject: 'Report Domain: agents.example Submitter: reporter.example Report-ID: <1234>',
      text: 'DMARC aggregate report',
      attachments: [{ filename: 'reporter.example!agents.example!1!2.xml.gz', content: Buffer.from(Bun.gzipSync(new TextEncoder().encode('<feedback/>'))), contentType: 'application/gzip' }],
    })
    expect((await latest(alice)).event_type).toBe('email.dmarc_report')
  })

  test('a TLS report and a DMARC failure report', async () => {
    const b = 'b2'
    await h.transport.sendMail({
      envelope: { from: 'tls@reporter.example', to: [aliceAddress] },
      raw: rfc822({ From: 'tls@reporter.example', To: aliceAddress, Subject: 'Report Domain: x', 'MIME-Version': '1.0', 'Content-Type': `multipart/report; report-type=tlsrpt; boundary="${b}"` }, `--${b}\nContent-Type: text/plain\n\nTLS report\n--${b}\nContent-Type: application/tlsrpt+gzip\nContent-Transfer-Encoding: base64\n\nH4sIAAAAAAAAA6uuBQBDv6ajAgAAAA==\n--${b}--\n`),
    })
    expect((await latest(alice)).event_type).toBe('email.tls_report')
    await h.transport.sendMail({
      envelope: { from: 'arf@reporter.example', to: [aliceAddress] },
      raw: rfc822({ From: 'arf@reporter.example', To: aliceAddress, Subject: 'DMARC failure', 'MIME-Version': '1.0', 'Content-Type': `multipart/report; report-type=feedback-report; boundary="${b}"` }, `--${b}\nContent-Type: text/plain\n\nauth failure\n--${b}\nContent-Type: message/feedback-report\n\nFeedback-Type: auth-failure\n--${b}--\n`),
    })
    expect((await latest(alice)).event_type).toBe('email.dmarc_failure')
  })
})

describe('threads', () => {
  test('a reply joins the thread of the message it references', async () => {
    const first = await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Plan', text: '1' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Unrelated', text: '2' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Re: Plan', text: '3', inReplyTo: first.messageId, references: [first.messageId] })
    const reply = await latest(alice)
    const thread = await h.request('GET', `/v1/threads/${reply.thread_id}`, { key: alice.key })
    expect(thread.status).toBe(200)
    expect(thread.body.data.emails.map((e: { subject: string }) => e.subject)).toEqual(['Plan', 'Re: Plan'])
    expect(thread.body.data.message_count).toBe(2)
    const threads = await h.request('GET', '/v1/threads?limit=100', { key: alice.key })
    expect(threads.body.data.some((t: { id: string }) => t.id === reply.thread_id)).toBe(true)
  })

  test('without references, a Re: from a participant joins by subject; from a stranger it does not', async () => {
    await h.transport.sendMail({ from: 'kim@sender.example', to: aliceAddress, subject: 'Budget 2027', text: '1' })
    const original = await latest(alice)
    await h.transport.sendMail({ from: 'kim@sender.example', to: aliceAddress, subject: 'RE: Budget 2027', text: '2' })
    expect((await latest(alice)).thread_id).toBe(original.thread_id)
    await h.transport.sendMail({ from: 'stranger@elsewhere.example', to: aliceAddress, subject: 'Re: Budget 2027', text: '3' })
    expect((await latest(alice)).thread_id).not.toBe(original.thread_id)
  })
})

describe('long-poll', () => {
  test('GET /v1/emails?wait= returns as soon as mail arrives', async () => {
    const carol = await createOrg()
    const address = await managedAddress(h.ctx, carol.orgId)
    const since = new Date().toISOString()
    const poll = h.request('GET', `/v1/emails?wait=30&since=${encodeURIComponent(since)}`, { key: carol.key })
    await Bun.sleep(100)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Wake up', text: 'now' })
    const res = await poll
    expect(res.status).toBe(200)
    expect(res.body.data.map((e: { subject: string }) => e.subject)).toEqual(['Wake up'])
  })

  test('wait=0 and an empty result returns at once; wait above the maximum is refused', async () => {
    const dave = await createOrg()
    const empty = await h.request('GET', '/v1/emails?wait=0', { key: dave.key })
    expect(empty.body).toMatchObject({ success: true, data: [], meta: { total: 0, cursor: null } })
    expectError(await h.request('GET', '/v1/emails?wait=61', { key: dave.key }), 400, 'validation_error', /^wait: /)
  })
})

describe('downloads with signed tokens', () => {
  let emailId: string
  beforeAll(async () => {
    await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Token', text: 'raw me' })
    emailId = (await latest(alice)).id
  })
  const get = (path: string, headers: Record<string, string> = {}) => h.request('GET', path, { headers })

  test('a fresh token works without a bearer', async () => {
    const token = signDownloadToken(h.ctx.keys, emailId, alice.orgId)
    const res = await h.app.handle(new Request(`http://api.test.local/v1/emails/${emailId}/raw?token=${token}`))
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('raw me')
  })

  test('a token older than 24 hours is download_token_expired with a remediation', async () => {
    const token = signDownloadToken(h.ctx.keys, emailId, alice.orgId, Date.now() - 24 * 3600_000 - 1000)
    const res = await get(`/v1/emails/${emailId}/raw?token=${token}`)
    expectError(res, 401, 'download_token_expired')
    expect(res.body.error.details.remediation).toContain('API key')
  })

  test('a tampered token, or one for another email, is download_token_invalid', async () => {
    const token = signDownloadToken(h.ctx.keys, emailId, alice.orgId)
    const [body, sig] = token.split('.')
    const forged = Buffer.from(JSON.stringify({ e: emailId, o: bob.orgId, x: 9999999999 })).toString('base64url')
    expectError(await get(`/v1/emails/${emailId}/raw?token=${forged}.${sig}`), 401, 'download_token_invalid')
    expectError(await get(`/v1/emails/${emailId}/raw?token=${body}.${sig!.slice(0, -2)}xx`), 401, 'download_token_invalid')
    const other = signDownloadToken(h.ctx.keys, crypto.randomUUID(), alice.orgId)
    expectError(await get(`/v1/emails/${emailId}/raw?token=${other}`), 401, 'download_token_invalid')
    expectError(await get(`/v1/emails/${emailId}/attachments.tar.gz?token=garbage`), 401, 'download_token_invalid')
  })

  test('without token or bearer: 401 unauthorized', async () => {
    expectError(await get(`/v1/emails/${emailId}/raw`), 401, 'unauthorized')
  })
})

describe('isolation', () => {
  test("another organization's message is 404 everywhere", async () => {
    await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Private', text: 'x' })
    const id = (await latest(alice)).id
    expectError(await h.request('GET', `/v1/emails/${id}`, { key: bob.key }), 404, 'not_found')
    expectError(await h.request('GET', `/v1/emails/${id}/raw`, { key: bob.key }), 404, 'not_found')
    expectError(await h.request('GET', `/v1/emails/${id}/attachments.tar.gz`, { key: bob.key }), 404, 'not_found')
    expectError(await h.request('POST', `/v1/emails/${id}/discard`, { key: bob.key }), 404, 'not_found')
    const thread = (await full(alice, id)).thread_id
    expectError(await h.request('GET', `/v1/threads/${thread}`, { key: bob.key }), 404, 'not_found')
    const search = await h.request('GET', '/v1/search?q=Private', { key: bob.key })
    expect(search.body.data.every((e: { id: string }) => e.id !== id)).toBe(true)
  })
})

describe('storage', () => {
  test('each stored message counts in /v1/account/storage', async () => {
    const erin = await createOrg()
    const address = await managedAddress(h.ctx, erin.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Count me', text: 'x'.repeat(5000) })
    const email = await latest(erin)
    const storage = (await h.request('GET', '/v1/account/storage', { key: erin.key })).body.data
    expect(storage.used_bytes).toBe(email.size_bytes)
    expect(storage.emails_count).toBe(1)
  })

  test('a free organization at its limit refuses mail with 452 4.2.2; a paid one does not', async () => {
    const free = await createOrg({ plan: 'free' })
    const address = await managedAddress(h.ctx, free.orgId)
    const sql = await testSql()
    await sql`update orgs set storage_used_bytes = 100 * 1024 * 1024 where id = ${free.orgId}`
    const err = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'x', text: 'x' }).catch((e: { response?: string }) => e)
    expect(String(err.response)).toStartWith('452 4.2.2')
    const paid = await createOrg({ plan: 'developer' })
    const paidAddress = await managedAddress(h.ctx, paid.orgId)
    await sql`update orgs set storage_used_bytes = 100::bigint * 1024 * 1024 * 1024 where id = ${paid.orgId}`
    expect((await h.transport.sendMail({ from: 'sam@sender.example', to: paidAddress, subject: 'x', text: 'x' })).accepted).toEqual([paidAddress])
  })

  test('a message that passed RCPT but does not fit the headroom is refused at DATA with 452 4.2.2 and nothing is stored', async () => {
    const free = await createOrg({ plan: 'free' })
    const address = await managedAddress(h.ctx, free.orgId)
    const sql = await testSql()
    // 2 KB left; nodemailer declares no SIZE, so RCPT checks a size of 1 and accepts
    await sql`update orgs set storage_used_bytes = 100 * 1024 * 1024 - 2048 where id = ${free.orgId}`
    const err = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'too big for what is left', text: 'z'.repeat(4096) }).catch((e: { response?: string }) => e)
    expect(String(err.response)).toStartWith('452 4.2.2')
    expect((await h.request('GET', '/v1/emails', { key: free.key })).body.meta.total).toBe(0)
  })

  test('a message over the size limit is refused with 552 5.3.4 and nothing is stored', async () => {
    const small = await inboundHarness({ SMTP_MAX_MESSAGE_BYTES: '4096' })
    try {
      const frank = await createOrg()
      const address = await managedAddress(small.ctx, frank.orgId)
      const err = await small.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'big', text: 'y'.repeat(10_000) }).catch((e: { response?: string }) => e)
      expect(String(err.response)).toMatch(/^552 5\.3\.4/)
      expect((await small.request('GET', '/v1/emails', { key: frank.key })).body.meta.total).toBe(0)
    } finally {
      await small.stop()
    }
  })
})

describe('search', () => {
  test('finds by subject, sender and text; escapes wildcards', async () => {
    const gail = await createOrg()
    const address = await managedAddress(h.ctx, gail.orgId)
    await h.transport.sendMail({ from: 'Quinn <quinn@finder.example>', to: address, subject: 'Invoice 100%', text: 'the walrus sleeps' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Other', text: 'nothing' })
    const q = async (term: string) => (await h.request('GET', `/v1/search?q=${encodeURIComponent(term)}`, { key: gail.key })).body.data.map((e: { subject: string }) => e.subject)
    expect(await q('invoice')).toEqual(['Invoice 100%'])
    expect(await q('quinn')).toEqual(['Invoice 100%'])
    expect(await q('walrus')).toEqual(['Invoice 100%'])
    expect(await q('100%')).toEqual(['Invoice 100%'])
    expect(await q('_')).toEqual([])
  })

  // Holding a table lock in one transaction while searching in another needs two connections;
  // the embedded fallback database has one.
  test.skipIf(embedded)('a search past its time budget is 504 search_timeout', async () => {
    const sql = await testSql()
    const henry = await createOrg()
    // Hold a lock the search must wait for, so its statement_timeout fires.
    let release!: () => void
    const held = new Promise<void>(r => (release = r))
    let locked!: () => void
    const isLocked = new Promise<void>(r => (locked = r))
    const tx = sql.begin(async t => {
      await t`lock table emails in access exclusive mode`
      locked()
      await held
    })
    await isLocked
    const { searchEmails } = await import('../../src/emails/service')
    const err = await searchEmails(sql, henry.orgId, 'x', { limit: 10, after: null }, 200).catch((e: { code: string; status: number }) => e)
    release()
    await tx
    expect(err).toMatchObject({ code: 'search_timeout', status: 504 })
  })
})

describe('content discard', () => {
  test('needs the opt-in, then removes content irreversibly and frees storage', async () => {
    const ivy = await createOrg()
    const address = await managedAddress(h.ctx, ivy.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Secret', text: 'classified' })
    const id = (await latest(ivy)).id
    expectError(await h.request('POST', `/v1/emails/${id}/discard`, { key: ivy.key }), 403, 'discard_not_enabled')
    const sql = await testSql()
    const { contentDiscardCommand } = await import('../../src/admin/commands')
    await expect(contentDiscardCommand(sql, ivy.orgId, 'maybe')).rejects.toThrow('on or off')
    expect(await contentDiscardCommand(sql, ivy.orgId, 'on')).toEqual({ org_id: ivy.orgId, content_discard_enabled: true })
    const res = await h.request('POST', `/v1/emails/${id}/discard`, { key: ivy.key })
    expect(res.status).toBe(200)
    const email = await full(ivy, id)
    expect(email).toMatchObject({ subject: 'Secret', text: null, html: null, attachments: [], content_discarded: true })
    expectError(await h.request('GET', `/v1/emails/${id}/raw`, { key: ivy.key }), 404, 'not_found')
    expect((await h.request('GET', '/v1/account/storage', { key: ivy.key })).body.data.used_bytes).toBe(0)
  })
})

describe('swaks, an independent SMTP client', () => {
  const swaks = Bun.which('swaks')
  test.skipIf(!swaks)('delivers over STARTTLS', async () => {
    const tls = await inboundHarness({ SMTP_TLS_CERT_FILE: 'test/fixtures/tls/cert.pem', SMTP_TLS_KEY_FILE: 'test/fixtures/tls/key.pem' })
    try {
      const jan = await createOrg()
      const address = await managedAddress(tls.ctx, jan.orgId)
      const out = await Bun.$`${swaks!} --server 127.0.0.1:${tls.smtpPort} --tls --from sam@sender.example --to ${address} --header "Subject: via swaks" --body "hi"`.quiet().nothrow()
      expect(out.exitCode).toBe(0)
      const email = (await tls.request('GET', '/v1/emails?limit=1', { key: jan.key })).body.data[0]
      expect(email.subject).toBe('via swaks')
      expect((await tls.request('GET', `/v1/emails/${email.id}`, { key: jan.key })).body.data.envelope.tls).toBe(true)
    } finally {
      await tls.stop()
    }
  })
})

test('STARTTLS with nodemailer stores the message with tls: true', async () => {
  const tls = await inboundHarness({ SMTP_TLS_CERT_FILE: 'test/fixtures/tls/cert.pem', SMTP_TLS_KEY_FILE: 'test/fixtures/tls/key.pem' })
  try {
    const kim = await createOrg()
    const address = await managedAddress(tls.ctx, kim.orgId)
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: tls.smtpPort, secure: false, requireTLS: true, tls: { rejectUnauthorized: false } })
    await transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Encrypted', text: 'x' })
    transport.close()
    const email = (await tls.request('GET', '/v1/emails?limit=1', { key: kim.key })).body.data[0]
    expect((await tls.request('GET', `/v1/emails/${email.id}`, { key: kim.key })).body.data.envelope.tls).toBe(true)
  } finally {
    await tls.stop()
  }
})

/** Reads the entries of a ustar archive. */
function untar(tar: Uint8Array): { name: string; content: Uint8Array }[] {
  const files: { name: string; content: Uint8Array }[] = []
  let offset = 0
  while (offset + 512 <= tar.length && tar[offset] !== 0) {
    const header = tar.subarray(offset, offset + 512)
    const name = new TextDecoder().decode(header.subarray(0, 100)).replace(/\0.*$/s, '')
    const size = parseInt(new TextDecoder().decode(header.subarray(124, 136)).replace(/\0.*$/s, ''), 8)
    const stored = header.subarray(148, 156)
    const sum = header.reduce((a, b, i) => a + (i >= 148 && i < 156 ? 32 : b), 0)
    expect(parseInt(new TextDecoder().decode(stored), 8)).toBe(sum)
    files.push({ name, content: tar.subarray(offset + 512, offset + 512 + size) })
    offset += 512 + Math.ceil(size / 512) * 512
  }
  return files
}

describe('stored before the 250, many sessions per commit', () => {
  test('the 250 follows the commit: the message, its thread and its delivery job are there when the client hears it', async () => {
    const sql = await testSql()
    const kai = await createOrg()
    const address = await managedAddress(h.ctx, kai.orgId)
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${crypto.randomUUID()}, ${kai.orgId}, 'http', 'https://hooks.example.com/in', true, '{}')`
    const info = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'committed', text: 'x' })
    expect(info.response).toStartWith('250 2.0.0')
    const [row] = await sql<{ thread_id: string; deliveries: number; jobs: number }[]>`
      select e.thread_id,
             (select count(*)::int from webhook_deliveries d where d.email_id = e.id) as deliveries,
             (select count(*)::int from jobs j join webhook_deliveries d on j.payload->>'delivery_id' = d.id::text where d.email_id = e.id) as jobs
        from emails e where e.org_id = ${kai.orgId} and e.subject = 'committed'`
    expect(row).toMatchObject({ deliveries: 1, jobs: 1 })
    expect(row!.thread_id).toBeString()
  })

  // Holding a row lock while other statements run needs a second connection, which PGlite does not have.
  test.skipIf(embedded)('messages that arrive while a batch is being written are stored together in the next transaction, in arrival order', async () => {
    const sql = await testSql()
    const { ingest } = await import('../../src/mail/inbound/ingest')
    const gate = await createOrg()
    const gateAddress = await managedAddress(h.ctx, gate.orgId)
    const lea = await createOrg()
    const address = await managedAddress(h.ctx, lea.orgId)
    const notified: string[] = []
    const listening = await sql.listen(EMAILS_CHANNEL, orgId => void notified.push(orgId))
    const held = await holdOrgRow(gate.orgId)
    const queued: Promise<unknown>[] = []
    try {
      queued.push(ingest(h.ctx, inbound(gateAddress, { Subject: 'gate' })))
      await held.waiting()
      // one at a time into the queue, so the arrival order is known
      const arrive = async (m: ReturnType<typeof inbound>) => {
        queued.push(ingest(h.ctx, m))
        while (inboundCommits(h.ctx).pending < queued.length - 1) await Bun.sleep(2)
      }
      await arrive(inbound(address, { Subject: 'Plan', 'Message-ID': '<plan-1@sender.example>' }))
      await arrive(inbound(address, { Subject: 'Re: Plan', 'In-Reply-To': '<plan-1@sender.example>' }))
      for (const i of [1, 2, 3]) await arrive(inbound(address, { Subject: `Other ${i}` }))
    } finally {
      await held.release()
    }
    await Promise.all(queued)
    const rows = await sql<{ subject: string; thread_id: string; tx: string }[]>`
      select subject, thread_id, xmin::text as tx from emails where org_id = ${lea.orgId} order by id`
    expect(rows.map(r => r.subject)).toEqual(['Plan', 'Re: Plan', 'Other 1', 'Other 2', 'Other 3'])
    expect(new Set(rows.map(r => r.tx)).size).toBe(1)
    expect(rows[1]!.thread_id).toBe(rows[0]!.thread_id)
    // the batch counts its five messages in the organization's storage and notifies other processes
    const [counters] = await sql<{ used: number; n: number; stored: number }[]>`
      select storage_used_bytes as used, emails_count as n, (select sum(size_bytes)::bigint from emails where org_id = ${lea.orgId}) as stored
        from orgs where id = ${lea.orgId}`
    expect([Number(counters!.used), counters!.n]).toEqual([Number(counters!.stored), 5])
    while (!notified.includes(lea.orgId)) await Bun.sleep(5)
    await listening.unlisten()
  })

  test.skipIf(embedded)('a batch that cannot get a row lock gives up after the lock timeout: its sender gets 451, the mail queued behind it is stored', async () => {
    const sql = await testSql()
    const stuck = await createOrg()
    const stuckAddress = await managedAddress(h.ctx, stuck.orgId)
    const next = await createOrg()
    const nextAddress = await managedAddress(h.ctx, next.orgId)
    const held = await holdOrgRow(stuck.orgId)
    try {
      const refused = h.transport.sendMail({ from: 'sam@sender.example', to: stuckAddress, subject: 'stuck', text: 'x' }).catch((e: { response?: string }) => e)
      await held.waiting()
      const stored = h.transport.sendMail({ from: 'sam@sender.example', to: nextAddress, subject: 'behind it', text: 'y' })
      expect(String((await refused as { response?: string }).response)).toStartWith('451 4.3.0')
      expect((await stored).response).toStartWith('250')
    } finally {
      await held.release()
    }
    expect((await h.request('GET', '/v1/emails', { key: stuck.key })).body.meta.total).toBe(0)
    expect((await latest(next)).subject).toBe('behind it')
  })

  test.skipIf(embedded)('a batch with a message that cannot be stored: the others are stored once each, with their deliveries', async () => {
    const sql = await testSql()
    const { ingest } = await import('../../src/mail/inbound/ingest')
    const gate = await createOrg()
    const gateAddress = await managedAddress(h.ctx, gate.orgId)
    const orgs = await Promise.all([createOrg(), createOrg()])
    const addresses = await Promise.all(orgs.map(o => managedAddress(h.ctx, o.orgId)))
    for (const o of orgs) await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${crypto.randomUUID()}, ${o.orgId}, 'http', 'https://hooks.example.com/in', true, '{}')`
    // resolved (as RCPT would have) to an organization that does not exist: its insert fails
    const ghost = `ghost-${crypto.randomUUID()}@${h.ctx.config.MANAGED_DOMAIN}`
    const poisoned = { ...inbound(ghost, { Subject: 'poison' }), recipients: [{ address: ghost, orgId: crypto.randomUUID(), storageLimit: null, headroom: null }] }
    const held = await holdOrgRow(gate.orgId)
    const results: Promise<unknown>[] = []
    try {
      results.push(ingest(h.ctx, inbound(gateAddress, { Subject: 'gate' })))
      await held.waiting()
      // one batch, the poisoned message between two good ones of two organizations, one of them to both
      for (const m of [inbound(addresses[0]!, { Subject: 'good 1' }), poisoned, { ...inbound(addresses[0]!, { Subject: 'good 2' }), rcptTo: addresses }]) {
        results.push(ingest(h.ctx, m).catch(error => error))
        while (inboundCommits(h.ctx).pending < results.length - 1) await Bun.sleep(2)
      }
    } finally {
      await held.release()
    }
    const [, first, failed, second] = await Promise.all(results)
    expect(failed).toBeInstanceOf(Error)
    expect(first).toMatchObject({ stored: [{ orgId: orgs[0]!.orgId }] })
    expect((second as { stored: unknown[] }).stored).toHaveLength(2)
    const counts = await sql<{ org_id: string; subject: string; emails: number; deliveries: number }[]>`
      select e.org_id, e.subject, count(distinct e.id)::int as emails, count(d.id)::int as deliveries
        from emails e left join webhook_deliveries d on d.email_id = e.id
       where e.org_id = any(${orgs.map(o => o.orgId)}::uuid[]) group by 1, 2`
    const rows = counts.map(c => `${c.org_id === orgs[0]!.orgId ? 'first' : 'second'} org: ${c.subject}, ${c.emails} email, ${c.deliveries} delivery`)
    expect(rows.sort()).toEqual(['first org: good 1, 1 email, 1 delivery', 'first org: good 2, 1 email, 1 delivery', 'second org: good 2, 1 email, 1 delivery'])
  })

  test('each message logs one structured line: what was stored where, its verdicts and its duration', async () => {
    const { ingest } = await import('../../src/mail/inbound/ingest')
    const { setLogLevel } = await import('../../src/log')
    const nia = await createOrg()
    const address = await managedAddress(h.ctx, nia.orgId)
    const lines: string[] = []
    const write = process.stdout.write
    process.stdout.write = ((chunk: string) => (lines.push(String(chunk)), true)) as typeof process.stdout.write
    setLogLevel('info')
    try {
      await ingest(h.ctx, inbound(address, { Subject: 'logged' }))
    } finally {
      setLogLevel((process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent')
      process.stdout.write = write
    }
    const logged = lines.map(l => JSON.parse(l)).filter(l => l.msg === 'inbound message')
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ level: 'info', event_type: 'email.received', stored: [{ org_id: nia.orgId }], refused_storage_full: [], spf: 'none', dkim: ['none'], dmarc: 'none' })
    expect(logged[0].duration_ms).toBeNumber()
  })

  test('a message that cannot be stored fails alone: the others of its batch are stored', async () => {
    const { GroupCommit } = await import('../../src/db/group-commit')
    const writes: number[][] = []
    const commits = new GroupCommit<number, number>(async batch => {
      writes.push(batch)
      if (batch.includes(13)) throw new Error('cannot store 13')
      return batch.map(n => n + 1)
    })
    const results = await Promise.allSettled([1, 13, 2, 3].map(n => commits.submit(n)))
    expect(results.map(r => (r.status === 'fulfilled' ? r.value : 'rejected'))).toEqual([2, 'rejected', 3, 4])
    // the lone first write, the batch that failed, then its items one by one
    expect(writes).toEqual([[1], [13, 2, 3], [13], [2], [3]])
  })
})

describe('recipients', () => {
  test('one query resolves every recipient in order: managed inboxes, verified domains, refusals, storage headroom', async () => {
    const { resolveRecipients, replies } = await import('../../src/mail/inbound/recipients')
    const { markDomainVerified } = await import('../../src/domains/service')
    const sql = await testSql()
    const free = await createOrg({ plan: 'free' })
    const paid = await createOrg({ plan: 'developer' })
    const freeAddress = await managedAddress(h.ctx, free.orgId)
    const domain = `recv-${crypto.randomUUID().slice(0, 8)}.example.com`
    await markDomainVerified(sql, h.ctx.keys, h.ctx.config.MANAGED_DOMAIN, paid.orgId, domain)
    await sql`update orgs set storage_used_bytes = 1000 where id = ${free.orgId}`
    const ghost = `ghost-${crypto.randomUUID()}@${h.ctx.config.MANAGED_DOMAIN}`
    const resolved = await resolveRecipients(h.ctx, [`Someone@${domain.toUpperCase()}.`, ghost, freeAddress.toUpperCase(), 'x@elsewhere.example', freeAddress])
    expect(resolved).toEqual([
      { address: `someone@${domain}.`, orgId: paid.orgId, storageLimit: null, headroom: null },
      replies.unknownUser,
      { address: freeAddress, orgId: free.orgId, storageLimit: 100 * 1024 * 1024, headroom: 100 * 1024 * 1024 - 1000 },
      replies.relayDenied,
      { address: freeAddress, orgId: free.orgId, storageLimit: 100 * 1024 * 1024, headroom: 100 * 1024 * 1024 - 1000 },
    ])
    expect(await resolveRecipients(h.ctx, [])).toEqual([])
  })

  test('storage filled up between RCPT and DATA: that copy is refused, the other organization gets its own', async () => {
    const { ingest } = await import('../../src/mail/inbound/ingest')
    const sql = await testSql()
    const full = await createOrg({ plan: 'free' })
    const roomy = await createOrg({ plan: 'free' })
    const fullAddress = await managedAddress(h.ctx, full.orgId)
    const roomyAddress = await managedAddress(h.ctx, roomy.orgId)
    const raw = new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: `${fullAddress}, ${roomyAddress}`, Subject: 'late' }, 'x\n'))
    await sql`update orgs set storage_used_bytes = 100 * 1024 * 1024 where id = ${full.orgId}`
    const result = await ingest(h.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo: [fullAddress, roomyAddress], remoteIp: '127.0.0.1', tls: false })
    expect(result.refused).toEqual([full.orgId])
    expect((await h.request('GET', '/v1/emails', { key: full.key })).body.data).toEqual([])
    expect((await h.request('GET', '/v1/emails', { key: roomy.key })).body.data.map((e: { subject: string }) => e.subject)).toEqual(['late'])
    const [counters] = await sql<{ used: number; n: number }[]>`select storage_used_bytes as used, emails_count as n from orgs where id = ${roomy.orgId}`
    expect([Number(counters!.used), counters!.n]).toEqual([raw.byteLength, 1])
  })

  test.skipIf(embedded)('concurrent mail cannot take a free organization past its limit: the messages that no longer fit when stored are refused', async () => {
    const { ingest } = await import('../../src/mail/inbound/ingest')
    const sql = await testSql()
    const org = await createOrg({ plan: 'free' })
    const address = await managedAddress(h.ctx, org.orgId)
    // the same size each, so that any two fit whichever order the batches take
    const messages = ['one', 'two', 'six'].map(subject => inbound(address, { Subject: subject }))
    const size = messages[0]!.raw.byteLength
    expect(new Set(messages.map(m => m.raw.byteLength))).toEqual(new Set([size]))
    const limit = 100 * 1024 * 1024
    // room for two of the three, and all three read that headroom before any of them is stored
    await sql`update orgs set storage_used_bytes = ${limit - 2 * size - 1}, emails_count = 0 where id = ${org.orgId}`
    const held = await holdOrgRow(org.orgId)
    const ingests = messages.map(m => ingest(h.ctx, m))
    try {
      // the first message's batch waits for the lock, the other two queue behind it
      await held.waiting()
      while (inboundCommits(h.ctx).pending < 2) await Bun.sleep(5)
    } finally {
      await held.release()
    }
    const results = await Promise.all(ingests)
    expect(results.map(r => r.stored.length).sort()).toEqual([0, 1, 1])
    expect(results.flatMap(r => r.refused)).toEqual([org.orgId])
    const [counters] = await sql<{ used: number; n: number }[]>`select storage_used_bytes as used, emails_count as n from orgs where id = ${org.orgId}`
    expect([Number(counters!.used), counters!.n]).toEqual([limit - 1, 2])
    expect((await h.request('GET', '/v1/emails', { key: org.key })).body.meta.total).toBe(2)
  })
})

describe('threads by reference before subject', () => {
  test('a message without references is stored by a statement that looks up no earlier mail', async () => {
    // Whether a lookup by Message-ID reads the organization's whole mail depends on the plan
    // PostgreSQL keeps for the prepared statement, which depends on statistics a test cannot
    // pin down; a statement without the lookup cannot read it under any plan.
    const { storeEmail } = await import('../../src/mail/store')
    const { parseMail } = await import('../../src/mail/inbound/parse')
    const { NO_VERDICTS } = await import('../../src/mail/inbound/authenticate')
    const postgres = (await import('postgres')).default
    const statements: string[] = []
    const sql = postgres((await testDatabase()).url, { max: 1, onnotice: () => {}, debug: (_connection, query) => statements.push(query) })
    try {
      const org = await createOrg()
      const store = async (headers: Record<string, string>) => {
        const raw = new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: 'x@y.example', Subject: 'lookups', ...headers }, 'x\n'))
        const mail = await parseMail(raw)
        statements.length = 0
        await sql.begin(tx => storeEmail(tx, { orgId: org.orgId, direction: 'inbound', eventType: 'email.received', mail, raw, mailFrom: 'sam@sender.example', rcptTo: ['x@y.example'], auth: NO_VERDICTS }))
        return statements.find(q => q.includes('insert into emails'))!
      }
      const lookup = /from emails where/
      expect(await store({})).not.toMatch(lookup)
      expect(await store({ 'In-Reply-To': '<earlier@sender.example>' })).toMatch(lookup)
    } finally {
      await sql.end()
    }
  })

  test('a reply that references one thread and shares the subject of a newer one joins the referenced thread', async () => {
    const dana = await createOrg()
    const address = await managedAddress(h.ctx, dana.orgId)
    const first = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Topic', text: '1' })
    const firstThread = (await latest(dana)).thread_id
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Re: Other', text: '2' })
    const other = (await latest(dana)).thread_id
    expect(other).not.toBe(firstThread)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Re: Other', text: '3', inReplyTo: first.messageId, references: [first.messageId] })
    expect((await latest(dana)).thread_id).toBe(firstThread)
    const thread = (await h.request('GET', `/v1/threads/${firstThread}`, { key: dana.key })).body.data
    expect(thread.message_count).toBe(2)
    expect(thread.emails.map((e: { subject: string }) => e.subject)).toEqual(['Topic', 'Re: Other'])
    expect(thread.participants).toContain('sam@sender.example')
  })

  test('a reference to messages of two threads: the thread of the newest referenced message', async () => {
    const eli = await createOrg()
    const address = await managedAddress(h.ctx, eli.orgId)
    const a = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Older thread', text: 'a' })
    const older = (await latest(eli)).thread_id
    const b = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Newer thread', text: 'b' })
    const newer = (await latest(eli)).thread_id
    // c joins the older thread, and is now the newest message of all
    const c = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Re: Older thread', text: 'c', references: [a.messageId] })
    expect((await latest(eli)).thread_id).toBe(older)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Both', text: 'd', references: [b.messageId, c.messageId] })
    expect((await latest(eli)).thread_id).toBe(older)
    expect(newer).not.toBe(older)
  })
})
