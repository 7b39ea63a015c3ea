/** `agent-mail suppressions` as a subprocess: add, list (a table, and JSON), remove; an unknown address shown as the API's not_found. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { cliService, type CliService } from './helpers'

let s: CliService
let org: TestOrg

beforeAll(async () => {
  s = await cliService()
  org = await createOrg()
})
afterAll(async () => {
  await s.stop()
})

const cli = (args: string[]) => s.cli(args, { env: { AGENT_MAIL_API_KEY: org.key } })

describe('agent-mail suppressions', () => {
  test('add, list, remove', async () => {
    expect(await cli(['suppressions'])).toMatchObject({ code: 0, stdout: 'No suppressed addresses.\n' })
    const added = await cli(['suppressions', 'add', 'Someone@Example.com', '--note', 'asked us to stop'])
    expect(added).toMatchObject({ code: 0, stdout: 'Suppressed someone@example.com (manual)\n' })
    const listed = await cli(['suppressions', 'list'])
    expect(listed.stdout).toMatch(/^address\s+reason\s+detail\s+added\s*$/m)
    expect(listed.stdout).toMatch(/^someone@example\.com\s+manual\s+asked us to stop\s+now/m)
    expect(JSON.parse((await cli(['suppressions', '--json'])).stdout)).toMatchObject([{ address: 'someone@example.com', reason: 'manual' }])
    expect(await cli(['suppressions', 'remove', 'someone@example.com'])).toMatchObject({
      code: 0,
      stdout: 'Removed someone@example.com from the suppression list\n',
    })
    const again = await cli(['suppressions', 'remove', 'someone@example.com'])
    expect(again.code).not.toBe(0)
    expect(again.stderr).toContain('not_found')
  })
})
