#!/usr/bin/env bun
/**
 * agent-mail: the command-line client of the service. Argument parsing and --help on every
 * command come from commander (the most used parser for Node CLIs, maintained, no dependencies);
 * output helpers are in output.ts. Run with `bun src/cli-client/main.ts`, or build one executable
 * with `make cli` (bun build --compile). Exit codes: see EXIT in api.ts and docs/cli.md.
 */
import { Command, CommanderError, Option } from 'commander'
import pkg from '../../package.json'
import { AgentMailError } from '@agent-mail/sdk'
import { CliError, cliErrorOf, EXIT } from './api'
import { accountCommands } from './commands/account'
import { draftCommands } from './commands/drafts'
import { functionCommands } from './commands/functions'
import { mailCommands } from './commands/mail'
import { suppressionCommands } from './commands/suppressions'
import { webhookCommands } from './commands/webhooks'
import { printError } from './output'

export function buildProgram(): Command {
  const program = new Command()
    .name('agent-mail')
    .description('Email for AI agents, from the terminal.')
    .version(pkg.version)
    .option('--url <url>', 'the service (default: AGENT_MAIL_URL, the saved login, or http://localhost:3000)')
    .addOption(new Option('--api-key <key>', 'an API key instead of the saved login').env('AGENT_MAIL_API_KEY'))
    .option('--json', 'machine-readable output (JSON; one object per line for tail and logs)')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
  accountCommands(program)
  mailCommands(program)
  webhookCommands(program)
  draftCommands(program)
  suppressionCommands(program)
  functionCommands(program)
  // every subcommand reports usage errors the same way (exit 2), and stops on them
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)]
  for (const c of all(program)) c.exitOverride()
  return program
}

export async function run(argv: string[]): Promise<number> {
  const program = buildProgram()
  try {
    await program.parseAsync(argv)
    return EXIT.ok
  } catch (error) {
    if (error instanceof CommanderError) {
      // help and version are successes; everything else commander throws is a usage error it already printed
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help' ? EXIT.ok : EXIT.usage
    }
    const failure = error instanceof AgentMailError ? cliErrorOf(error) : error
    printError(failure, process.argv.includes('--json'))
    return failure instanceof CliError ? failure.exitCode : EXIT.error
  }
}

if (import.meta.main) {
  process.on('SIGINT', () => process.exit(130))
  process.exit(await run(process.argv))
}
