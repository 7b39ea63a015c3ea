/** Reports about mail the service sent, built from the MTA fixtures of test/fixtures/dsn/ and delivered over SMTP. */
import { expect } from 'bun:test'
import { RawClient } from '../helpers/smtp-client'

export const FIXTURES = `${import.meta.dir}/../fixtures/dsn`

/** A fixture with its placeholders filled in and CRLF line endings; `original` is the message as the relay received it. */
export async function report(fixture: string, f: { sender: string; recipient: string; original: string }): Promise<string> {
  const text = await Bun.file(`${FIXTURES}/${fixture}`).text()
  const original = f.original.replace(/\r\n/g, '\n')
  const headers = original.slice(0, original.indexOf('\n\n') + 1)
  return text
    .replace(/\r\n/g, '\n')
    .replaceAll('{{ORIGINAL_HEADERS}}', headers)
    .replaceAll('{{ORIGINAL}}', original)
    .replaceAll('{{SENDER}}', f.sender)
    .replaceAll('{{RECIPIENT}}', f.recipient)
    .replaceAll('{{DATE}}', new Date().toUTCString().replace('GMT', '+0000'))
    .replace(/\n/g, '\r\n')
}

/** Delivers a message over a real SMTP session to our listener, from the null reverse-path (as an MTA sends a DSN) or `mailFrom`. */
export async function deliver(port: number, rcpt: string, raw: string, mailFrom = ''): Promise<void> {
  const c = await RawClient.connect(port)
  expect(await c.read()).toStartWith('220')
  expect(await c.command('EHLO mx1.example.net')).toStartWith('250')
  expect(await c.command(`MAIL FROM:<${mailFrom}>`)).toStartWith('250')
  expect(await c.command(`RCPT TO:<${rcpt}>`)).toStartWith('250')
  expect(await c.command('DATA')).toStartWith('354')
  const body = raw.replace(/(^|\r\n)\./g, '$1..')
  c.write(`${body}${body.endsWith('\r\n') ? '' : '\r\n'}.\r\n`)
  expect(await c.read()).toStartWith('250')
  await c.command('QUIT')
  c.end()
}
