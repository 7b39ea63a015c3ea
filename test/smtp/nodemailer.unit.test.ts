import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import nodemailer from 'nodemailer'
import { startSmtpServer } from '../../src/smtp/server'
import type { SmtpEnvelope, SmtpServer, SmtpSessionInfo } from '../../src/smtp/types'

const fixtures = `${import.meta.dir}/../fixtures/tls`
const cert = await Bun.file(`${fixtures}/cert.pem`).text()
const key = await Bun.file(`${fixtures}/key.pem`).text()

interface Received {
  info: SmtpSessionInfo
  env: SmtpEnvelope
  text: string
}

let server: SmtpServer
const received: Received[] = []

beforeAll(async () => {
  server = await startSmtpServer(
    {
      hostname: 'mx.test',
      host: '127.0.0.1',
      port: 0,
      maxMessageBytes: 64 * 1024,
      maxRecipients: 5,
      maxConnections: 10,
      maxBadCommands: 5,
      idleTimeoutMs: 5_000,
      tls: { cert, key },
    },
    {
      onRcptTo: async (_s, _env, rcpt) => (rcpt.startsWith('nobody@') ? { code: 550, enhanced: '5.1.1', message: 'no such user' } : undefined),
      onData: async (info, env, message) => void received.push({ info, env, text: new TextDecoder().decode(message) }),
    },
  )
})

afterAll(() => server.stop(100))

function transport(options: { requireTLS?: boolean; ignoreTLS?: boolean }) {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port: server.port,
    secure: false,
    tls: { rejectUnauthorized: false },
    ...options,
  })
}

describe('nodemailer against the listener', () => {
  test('plain send: envelope, Received: header and exact body', async () => {
    received.length = 0
    const info = await transport({ ignoreTLS: true }).sendMail({
      from: 'alice@example.org',
      to: 'bob@mx.test',
      subject: 'plain',
      text: 'line one\n.line starting with a dot\nend',
    })
    expect(info.accepted).toEqual(['bob@mx.test'])
    expect(info.response).toStartWith('250 2.0.0')
    const [msg] = received
    expect(msg!.info.tls).toBe(false)
    expect(msg!.env.mailFrom).toBe('alice@example.org')
    expect(msg!.env.rcptTo).toEqual(['bob@mx.test'])
    expect(msg!.text).toMatch(/^Received: from \S+ \(\[127\.0\.0\.1\]\)\r\n\tby mx\.test with ESMTP id \w+-1\r\n\tfor <bob@mx\.test>;\r\n\t\w{3}, /)
    expect(msg!.text).toContain('Subject: plain\r\n')
    expect(msg!.text).toContain('\r\n.line starting with a dot\r\n')
    expect(msg!.text).not.toMatch(/[^\r]\n/)
  })

  test('STARTTLS with requireTLS: the message arrives over TLS, stamped ESMTPS', async () => {
    received.length = 0
    const info = await transport({ requireTLS: true }).sendMail({
      from: 'alice@example.org',
      to: 'bob@mx.test',
      subject: 'secure',
      text: 'over tls',
    })
    expect(info.accepted).toEqual(['bob@mx.test'])
    expect(received[0]!.info.tls).toBe(true)
    expect(received[0]!.text).toContain(' with ESMTPS id ')
    expect(received[0]!.text).toContain('over tls')
  })

  test('a rejected recipient is reported while the others get the message', async () => {
    received.length = 0
    const info = await transport({ ignoreTLS: true }).sendMail({
      from: 'alice@example.org',
      to: ['bob@mx.test', 'nobody@mx.test', 'carol@mx.test'],
      subject: 'partial',
      text: 'hi',
    })
    expect(info.accepted).toEqual(['bob@mx.test', 'carol@mx.test'])
    expect(info.rejected).toEqual(['nobody@mx.test'])
    expect(received[0]!.env.rcptTo).toEqual(['bob@mx.test', 'carol@mx.test'])
    expect(received[0]!.text).toMatch(/id \w+-1;\r\n/)
  })

  test('a message over the size limit is refused', async () => {
    const big = 'x'.repeat(70) + '\n'
    await expect(
      transport({ ignoreTLS: true }).sendMail({
        from: 'alice@example.org',
        to: 'bob@mx.test',
        subject: 'big',
        text: big.repeat(1000),
      }),
    ).rejects.toThrow(/552/)
  })
})
