/** The signing secrets deliveries use, cached per process: a rotation here is seen at once. */
import { expect, test } from 'bun:test'
import { cachedSigningSecrets, rotateWebhookSecret, signingSecrets } from '../../src/account/webhook-secret'
import { createOrg, testApp } from '../helpers/app'

const { ctx } = await testApp()

test('cached for a few seconds; a rotation in this process signs with both secrets at once', async () => {
  const org = await createOrg()
  const [old] = await cachedSigningSecrets(ctx, org.orgId)
  expect(await signingSecrets(ctx.sql, ctx.keys, org.orgId)).toEqual([old!])
  // a change the cache is not told about (another process's rotation) is not seen yet
  await ctx.sql`update webhook_secrets set secret_sealed = ${ctx.keys.encrypt('whsec_elsewhere')} where org_id = ${org.orgId}`
  expect(await cachedSigningSecrets(ctx, org.orgId)).toEqual([old!])
  const rotated = await rotateWebhookSecret(ctx, org.orgId)
  expect(await cachedSigningSecrets(ctx, org.orgId)).toEqual([rotated, 'whsec_elsewhere'])
})
