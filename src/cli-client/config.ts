/**
 * Where the CLI keeps its login: `$XDG_CONFIG_HOME/agent-mail/credentials.json` (default
 * `~/.config`; `%APPDATA%` on Windows), the directory 0700 and the file 0600, written whole to a
 * temporary file and renamed, so a crash never leaves half a token behind.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

export interface Credentials {
  base_url: string
  access_token: string
  refresh_token: string
  /** unix milliseconds */
  expires_at: number
  org_id: string
  user_id: string
}

export function configDir(env = process.env): string {
  const base = env.XDG_CONFIG_HOME || (process.platform === 'win32' && env.APPDATA) || join(homedir(), '.config')
  return join(base, 'agent-mail')
}

export const credentialsPath = (env = process.env) => join(configDir(env), 'credentials.json')

export function readCredentials(env = process.env): Credentials | null {
  try {
    return JSON.parse(readFileSync(credentialsPath(env), 'utf8')) as Credentials
  } catch {
    return null
  }
}

export function writeCredentials(credentials: Credentials, env = process.env) {
  const dir = configDir(env)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const path = credentialsPath(env)
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 })
  // the mode of a new file is masked by the umask; make sure of it
  chmodSync(temporary, 0o600)
  renameSync(temporary, path)
}

export function removeCredentials(env = process.env) {
  rmSync(credentialsPath(env), { force: true })
}
