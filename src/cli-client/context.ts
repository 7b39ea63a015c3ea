/** The options every command shares (--url, --api-key, --json) and the API client they make. */
import type { Command } from 'commander'
import { Api, type GlobalOptions } from './api'

export function globals(cmd: Command): { api: Api; json: boolean; options: GlobalOptions } {
  const options = cmd.optsWithGlobals() as GlobalOptions
  return { api: new Api(options), json: Boolean(options.json), options }
}
