/** Inbound mail over SMTP from independent clients (nodemailer, swaks): stored, parsed, authenticated. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import nodemailer from 'nodemailer'
import { createOrg, type TestOrg } from '../../helpers/app'
import { inboundHarness, managedAddress, rfc822, senderDomain, type InboundHarness } from '../../helpers/mail'

let h: InboundHarness, alice: TestOrg, aliceAddress: string, bob: TestOrg, bobAddress: string

beforeAll(async () => {
  h = await inboundHarness()
  alice = await createOrg({ plan: 'developer' })
  aliceAddress = await managedAddress(h.ctx, alice.orgId)
  bob = await createOrg({ plan: 'developer' })
  bobAddress = await managedAddress(h.ctx, bob.orgId)
})
afterAll(() => h.stop())

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

describe('delivery over SMTP with nodemailer', () => {
  test('a message to a managed inbox is stored and readable', async () => {
    const info = await h.transport.sendMail({ from: 'Sam <sam@sender.example>', to: aliceAddress, subject: 'Hello agent', text: 'First line\nSecond line' })
    expect(info.accepted).toEqual([aliceAddress])
    expect(info.response).toStartWith('250')
    const summary = await h.latest(alice)
    expect(summary).toMatchObject({
      direction: 'inbound',
      event_type: 'email.received',
      subject: 'Hello agent',
      from: { address: 'sam@sender.example', name: 'Sam' },
      to: [{ address: aliceAddress }],
    })
    const email = await h.email(alice, summary.id)
    expect(email.text.trim()).toBe('First line\nSecond line')
    expect(email.message_id).toBe(info.messageId)
    expect(email.envelope).toMatchObject({
      mail_from: 'sam@sender.example',
      rcpt_to: [aliceAddress],
      remote_ip: '127.0.0.1',
      helo: 'client.sender.example',
      tls: false,
    })
    expect(email.authentication.spf.result).toBe('none')
    expect(email.headers[0]).toMatchObject({ name: 'received' })
  })

  test('a NUL byte in a decoded body or header is dropped from the parsed fields; the raw bytes keep it', async () => {
    const raw = rfc822(
      {
        From: 'sam@sender.example',
        To: aliceAddress,
        Subject: '=?utf-8?Q?nul=00here?=',
        'Content-Type': 'text/plain; charset=utf-8',
        'Content-Transfer-Encoding': 'quoted-printable',
      },
      'before=00after\n',
    )
    const info = await h.transport.sendMail({ envelope: { from: 'sam@sender.example', to: [aliceAddress] }, raw })
    expect(info.response).toStartWith('250')
    const email = await h.email(alice, (await h.latest(alice)).id)
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
    const a = await h.latest(alice)
    const b = await h.latest(bob)
    expect(a.subject).toBe('To both')
    expect(b.subject).toBe('To both')
    expect(a.id).not.toBe(b.id)
    expect((await h.email(alice, a.id)).envelope.rcpt_to).toEqual([aliceAddress])
  })

  test('a domain we do not host is relaying: 550 5.7.1', async () => {
    const err = await h.transport
      .sendMail({ from: 'sam@sender.example', to: 'someone@elsewhere.example', subject: 'x', text: 'x' })
      .catch((e: { response?: string }) => e)
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
    const summary = await h.latest(alice)
    expect(summary.attachment_count).toBe(2)
    const email = await h.email(alice, summary.id)
    expect(email.attachments.map((a: { filename: string; size_bytes: number; content_type: string }) => [a.filename, a.size_bytes, a.content_type])).toEqual([
      ['notes.txt', 11, 'text/plain'],
      ['data.bin', 5, 'application/octet-stream'],
    ])
    const res = await h.app.handle(
      new Request(`http://api.test.local/v1/emails/${summary.id}/attachments.tar.gz`, { headers: { authorization: `Bearer ${alice.key}` } }),
    )
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/gzip')
    const tar = Bun.gunzipSync(new Uint8Array(await res.arrayBuffer()))
    const files = untar(tar)
    expect(files.map(f => f.name)).toEqual(['notes.txt', 'data.bin'])
    expect(new TextDecoder().decode(files[0]!.content)).toBe('hello notes')
    expect([...files[1]!.content]).toEqual([0, 1, 2, 3, 255])
  })

  test('the raw download is the exact bytes sent, after our Received: trace header', async () => {
    const sent = rfc822(
      { From: 'sam@sender.example', To: aliceAddress, Subject: 'Exact', 'Message-ID': `<${crypto.randomUUID()}@sender.example>` },
      '.leading dot\n..two dots\nünïcödé 8-bit\n',
    )
    await h.transport.sendMail({ envelope: { from: 'sam@sender.example', to: [aliceAddress] }, raw: sent })
    const summary = await h.latest(alice)
    const res = await h.app.handle(new Request(`http://api.test.local/v1/emails/${summary.id}/raw`, { headers: { authorization: `Bearer ${alice.key}` } }))
    expect(res.headers.get('content-type')).toBe('message/rfc822')
    const raw = Buffer.from(await res.arrayBuffer())
    const trace = raw.subarray(0, raw.indexOf('\r\n', raw.indexOf('\r\n;') >= 0 ? 0 : 0)).toString()
    expect(trace).toStartWith('Received: from client.sender.example ([127.0.0.1])')
    expect(raw.subarray(raw.length - Buffer.byteLength(sent)).equals(Buffer.from(sent))).toBe(true)
    const email = await h.email(alice, summary.id)
    expect(email.text).toBe('.leading dot\n..two dots\nünïcödé 8-bit\n')
    expect(summary.size_bytes).toBe(raw.length)
  })

  test('a DKIM-signed message is verified against DNS: dkim, spf and dmarc pass', async () => {
    const signer = senderDomain(h.dns, 'signed.example')
    const message = await signer.sign(
      rfc822({ From: 'Pay <pay@signed.example>', To: aliceAddress, Subject: 'Signed', 'Message-ID': '<signed-1@signed.example>' }, 'authentic\n'),
    )
    await h.transport.sendMail({ envelope: { from: 'pay@signed.example', to: [aliceAddress] }, raw: message })
    const email = await h.email(alice, (await h.latest(alice)).id)
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
    const email = await h.email(alice, (await h.latest(alice)).id)
    expect(email.authentication.dkim[0].result).not.toBe('pass')
    expect(email.authentication.dmarc.result).toBe('fail')
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

describe('swaks, an independent SMTP client', () => {
  const swaks = Bun.which('swaks')
  test.skipIf(!swaks)('delivers over STARTTLS', async () => {
    const tls = await inboundHarness({ SMTP_TLS_CERT_FILE: 'test/fixtures/tls/cert.pem', SMTP_TLS_KEY_FILE: 'test/fixtures/tls/key.pem' })
    try {
      const jan = await createOrg()
      const address = await managedAddress(tls.ctx, jan.orgId)
      const out =
        await Bun.$`${swaks!} --server 127.0.0.1:${tls.smtpPort} --tls --from sam@sender.example --to ${address} --header "Subject: via swaks" --body "hi"`
          .quiet()
          .nothrow()
      expect(out.exitCode).toBe(0)
      const email = (await tls.request('GET', '/v1/emails?limit=1', { key: jan.key })).body.data[0]
      expect(email.subject).toBe('via swaks')
      expect((await tls.request('GET', `/v1/emails/${email.id}`, { key: jan.key })).body.data.envelope.tls).toBe(true)
    } finally {
      await tls.stop()
    }
  })
})
