/**
 * Headless Chromium for browser tests: Debian's /usr/bin/chromium driven by playwright-core
 * (which never downloads a browser), with the flags this machine needs (no background
 * networking: its connections are refused here). Without Chromium a test is skipped on a
 * developer's machine, and fails in CI (CI=true), where .ci/run installs it: a browser test must
 * never pass there by not running.
 */
import { expect } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContext } from 'playwright-core'

/** Debian's Chromium; CHROMIUM_PATH names another (or a missing one, to see what CI does without it). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

const installed = existsSync(CHROMIUM)
const inCi = process.env.CI === 'true'

/** Whether to skip a browser test: only outside CI, only without Chromium. */
export const skipBrowser = !installed && !inCi
if (skipBrowser) console.warn(`browser test skipped: ${CHROMIUM} is not installed (apt-get install chromium); in CI it fails instead`)

/** A fresh browser profile; close it with the returned function. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  expect(existsSync(CHROMIUM), `${CHROMIUM} must be installed for the browser tests (.ci/run installs it)`).toBe(true)
  const { chromium } = await import('playwright-core')
  const profile = mkdtempSync(join(tmpdir(), 'agent-mail-chromium-'))
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS })
  return {
    context,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
