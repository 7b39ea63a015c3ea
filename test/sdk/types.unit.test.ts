/**
 * The SDK is typed where it says it is: test/sdk/types/checks.ts, compiled by tsc as a user's
 * code would be, must compile, and each of its `@ts-expect-error` lines (a wrong path, field,
 * parameter, error code or event name) must be an error.
 */
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { REPO } from '../helpers/dev-process'

test('paths, parameters, bodies, answers, error codes and webhook events are checked by the compiler', async () => {
  const tsc = Bun.spawn([process.execPath, 'x', 'tsc', '--noEmit', '-p', join(import.meta.dir, 'types/tsconfig.json')], {
    cwd: REPO,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, code] = await Promise.all([new Response(tsc.stdout).text(), tsc.exited])
  expect({ code, out }).toEqual({ code: 0, out: '' })
}, 120_000)
