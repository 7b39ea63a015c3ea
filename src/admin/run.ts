/**
 * One operator command, from its arguments to what the CLI prints: the same function runs in
 * `bin/admin` (on a database it opened) and inside a running `make dev` (on its own database,
 * for a `bin/admin` that handed the command over through `admin-socket.ts`).
 */
import { parseArgs } from 'node:util'
import type { Config } from '../config'
import type { ServerKeys } from '../crypto'
import type { Sql } from '../db/client'
import { managedDkimRecord } from '../mail/outbound/managed-key'
import {
  contentDiscardCommand,
  createKeyCommand,
  createOrgCommand,
  createUserCommand,
  entitleCommand,
  mintCreditCommand,
  setApiLimitCommand,
  setPlanCommand,
  setSendLimitsCommand,
  setSettleCapsCommand,
  UsageError,
  verifyDomainCommand,
} from './commands'

export const USAGE = `usage:
  bin/admin org create --plan <free|agent|developer|power|platinum> [--email <owner>] [--name <name>]
  bin/admin org set-plan <org_id> <plan>
  bin/admin org entitle <org_id> <entitlement>
  bin/admin org set-api-limit <org_id> <requests_per_minute|plan>
  bin/admin org set-send-limits <org_id> <per_hour|plan> <per_day|plan>
  bin/admin org content-discard <org_id> <on|off>
  bin/admin key create <org_id> [--name <name>]
  bin/admin user create --email <email> --password <password> [--org <org_id>] [--role owner|admin|member]
  bin/admin credit mint --amount-cents <n>
  bin/admin domain verify <org_id> <domain>
  bin/admin x402 set-caps <org_id> <daily|default> <monthly|default> <per_settle|default>   (USDC base units)
  bin/admin managed-dkim`

/** What the command prints and its exit status: 0 with the JSON result, 2 for a usage error, 1 for a failure. */
export interface AdminOutcome {
  code: number
  stdout: string
  stderr: string
}

export function parseAdminArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      plan: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      'amount-cents': { type: 'string' },
      password: { type: 'string' },
      org: { type: 'string' },
      role: { type: 'string' },
    },
  })
}

async function dispatch(sql: Sql, keys: ServerKeys, config: Config, argv: string[]): Promise<unknown> {
  const { values, positionals } = parseAdminArgs(argv)
  const [group, command, ...rest] = positionals
  // the DKIM TXT record of the managed domain, for the operator to publish (the key is created on first use)
  if (group === 'managed-dkim' && command === undefined) return managedDkimRecord(sql, keys, config.MANAGED_DOMAIN)
  switch (`${group} ${command}`) {
    case 'org create':
      return createOrgCommand(sql, values)
    case 'org set-plan':
      return setPlanCommand(sql, rest[0], rest[1])
    case 'org entitle':
      return entitleCommand(sql, rest[0], rest[1])
    case 'org set-api-limit':
      return setApiLimitCommand(sql, rest[0], rest[1])
    case 'org content-discard':
      return contentDiscardCommand(sql, rest[0], rest[1])
    case 'org set-send-limits':
      return setSendLimitsCommand(sql, rest[0], rest[1], rest[2])
    case 'key create':
      return createKeyCommand(sql, rest[0], values.name)
    case 'user create':
      return createUserCommand(sql, values)
    case 'credit mint':
      return mintCreditCommand(sql, values['amount-cents'])
    case 'domain verify':
      return verifyDomainCommand(sql, keys, config, rest[0], rest[1])
    case 'x402 set-caps':
      return setSettleCapsCommand(sql, rest[0], rest[1], rest[2], rest[3])
    default:
      throw new UsageError(`unknown command: ${positionals.join(' ') || '(none)'}`)
  }
}

/** A usage error: ours, or parseArgs's (an unknown or incomplete option), which carries an ERR_PARSE_ARGS_* code. */
export const isUsageError = (error: unknown) =>
  error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))

export async function runAdmin(sql: Sql, keys: ServerKeys, config: Config, argv: string[]): Promise<AdminOutcome> {
  try {
    return { code: 0, stdout: `${JSON.stringify(await dispatch(sql, keys, config, argv), null, 2)}\n`, stderr: '' }
  } catch (error) {
    if (isUsageError(error)) return { code: 2, stdout: '', stderr: `${(error as Error).message}\n\n${USAGE}\n` }
    return { code: 1, stdout: '', stderr: `${error instanceof Error ? error.message : String(error)}\n` }
  }
}
