/** The options every command shares (--url, --api-key, --json), the API client they make, and option parsing. */
import type { Command } from 'commander'
import { Api, CliError, EXIT, type GlobalOptions } from './api'
import { printJson } from './output'

export function globals(cmd: Command): { api: Api; json: boolean; options: GlobalOptions } {
  const options = cmd.optsWithGlobals() as GlobalOptions
  return { api: new Api(options), json: Boolean(options.json), options }
}

/** A command that asks the API once: its answer printed as it is with --json, else the text `human` makes of it. */
export async function answer<T>(cmd: Command, ask: (api: Api) => Promise<T>, human: (answer: T) => string): Promise<void> {
  const { api, json } = globals(cmd)
  const got = await ask(api)
  if (json) return printJson(got)
  process.stdout.write(human(got))
}

/** A whole number of at least 1 given to an option such as --limit (a usage error otherwise). */
export function count(option: string, value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${option}: must be a whole number of at least 1`, EXIT.usage)
  return n
}
