/**
 * `bun run admin <command>`: the operator command. Prints one JSON object on success; usage
 * errors go to stderr with exit code 2. With the embedded database, stop `make dev` first
 * (PGlite allows one process at a time) or point DATABASE_URL at the server.
 */
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config'
import { loadServerKeys } from '../crypto'
import { openDatabase } from '../db/client'
import { migrate } from '../db/migrate'
import { setLogLevel } from '../log'
import { managedDkimRecord } from '../mail/outbound/managed-key'
import { createKeyCommand, createOrgCommand, createUserCommand, entitleCommand, mintCreditCommand, setApiLimitCommand, setPlanCommand, setSendLimitsCommand, UsageError, verifyDomainCommand, contentDiscardCommand } from './commands'

const USAGE = `usage:
  bun run admin org create --plan <free|agent|developer|power|platinum> [--email <owner>] [--name <name>]
  bun run admin org set-plan <org_id> <plan>
  bun run admin org entitle <org_id> <entitlement>
  bun run admin org set-api-limit <org_id> <requests_per_minute|plan>
  bun run admin org set-send-limits <org_id> <per_hour|plan> <per_day|plan>
  bun run admin org content-discard <org_id> <on|off>
  bun run admin key create <org_id> [--name <name>]
  bun run admin user create --email <email> --password <password> [--org <org_id>] [--role owner|admin|member]
  bun run admin credit mint --amount-cents <n>
  bun run admin domain verify <org_id> <domain>
  bun run admin managed-dkim`

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
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
  const [group, command, ...rest] = positionals
  const config = loadConfig()
  setLogLevel('warn')
  const db = await openDatabase(config)
  try {
    await migrate(db.sql)
    // the DKIM TXT record of the managed domain, for the operator to publish (the key is created on first use)
    if (group === 'managed-dkim' && command === undefined) return await managedDkimRecord(db.sql, loadServerKeys(config), config.MANAGED_DOMAIN)
    switch (`${group} ${command}`) {
      case 'org create':
        return await createOrgCommand(db.sql, values)
      case 'org set-plan':
        return await setPlanCommand(db.sql, rest[0], rest[1])
      case 'org entitle':
        return await entitleCommand(db.sql, rest[0], rest[1])
      case 'org set-api-limit':
        return await setApiLimitCommand(db.sql, rest[0], rest[1])
      case 'org content-discard':
        return await contentDiscardCommand(db.sql, rest[0], rest[1])
      case 'org set-send-limits':
        return await setSendLimitsCommand(db.sql, rest[0], rest[1], rest[2])
      case 'key create':
        return await createKeyCommand(db.sql, rest[0], values.name)
      case 'user create':
        return await createUserCommand(db.sql, values)
      case 'credit mint':
        return await mintCreditCommand(db.sql, values['amount-cents'])
      case 'domain verify':
        return await verifyDomainCommand(db.sql, loadServerKeys(config), config, rest[0], rest[1])
      default:
        throw new UsageError(`unknown command: ${positionals.join(' ') || '(none)'}`)
    }
  } finally {
    await db.close()
  }
}

try {
  console.log(JSON.stringify(await main(process.argv.slice(2)), null, 2))
} catch (error) {
  if (error instanceof UsageError || error instanceof ConfigError || (error instanceof TypeError && 'code' in error)) {
    console.error(`${error.message}\n\n${USAGE}`)
    process.exit(2)
  }
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
}
