/** Raw message and attachment downloads, with a bearer key or a signed token. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { signDownloadToken } from '../../src/emails/download-token'

let h: InboundHarness, alice: TestOrg, aliceAddress: string, bob: TestOrg

beforeAll(async () => {
  h = await inboundHarness()
  alice = await createOrg({ plan: 'developer' })
  aliceAddress = await managedAddress(h.ctx, alice.orgId)
  bob = await createOrg({ plan: 'developer' })
  // bob has a mailbox of his own, which alice must never see
  await managedAddress(h.ctx, bob.orgId)
})
afterAll(() => h.stop())

describe('downloads with signed tokens', () => {
  let emailId: string
  beforeAll(async () => {
    await h.transport.sendMail({ from: 'sam@sender.example', to: aliceAddress, subject: 'Token', text: 'raw me' })
    emailId = (await h.latest(alice)).id
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
