/** login (the device flow of /v1/cli/login), signup, whoami, logout. */
import { hostname } from 'node:os'
import type { Command } from 'commander'
import pkg from '../../../package.json'
import { AgentMailError } from '@agent-mail/sdk'
import { type Api, CliError, EXIT } from '../api'
import { credentialsPath, removeCredentials, writeCredentials } from '../config'
import { ask, color, listing, printJson } from '../output'
import { answer, globals } from '../context'

interface TokenSet {
  access_token: string
  refresh_token: string
  expires_in: number
  org_id: string
  user_id: string
}

function save(api: Api, tokens: TokenSet) {
  writeCredentials({
    base_url: api.baseUrl,
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token,
    expires_at: Date.now() + tokens.expires_in * 1000,
    org_id: tokens.org_id,
    user_id: tokens.user_id,
  })
}

const say = (text: string) => process.stderr.write(text + '\n')

export function accountCommands(program: Command) {
  program
    .command('login')
    .description('log in through the browser (device flow); the token is kept in your config directory and refreshed')
    .action(async (_opts, cmd: Command) => {
      const { api, json } = globals(cmd)
      const start = await api.sdk.post('/v1/cli/login/start', {
        auth: false,
        body: { client_name: `agent-mail CLI ${pkg.version}`, device_name: hostname().slice(0, 100) },
      })
      say(`To log in, open ${color.cyan(start.verification_uri_complete)}`)
      say(`and check that it shows the code ${color.bold(start.user_code)}. Waiting...`)
      let interval: number = start.interval
      const deadline = Date.now() + start.expires_in * 1000
      while (Date.now() < deadline) {
        await Bun.sleep(interval * 1000)
        try {
          const tokens = await api.sdk.post('/v1/cli/login/poll', { auth: false, body: { device_code: start.device_code } })
          save(api, tokens)
          if (json) printJson({ logged_in: true, org_id: tokens.org_id, user_id: tokens.user_id, credentials: credentialsPath() })
          else say(`${color.green('Logged in')} to organization ${tokens.org_id}. Credentials: ${credentialsPath()}`)
          return
        } catch (error) {
          if (!(error instanceof AgentMailError)) throw error
          if (error.code === 'authorization_pending') continue
          if (error.code === 'slow_down') {
            interval = typeof error.details.interval === 'number' ? error.details.interval : interval + 5
            continue
          }
          if (error.code === 'access_denied') throw new CliError('the login was denied in the browser', EXIT.auth, error.code)
          if (error.code === 'expired_token')
            throw new CliError('the login code expired before it was approved: run `agent-mail login` again', EXIT.auth, error.code)
          throw error
        }
      }
      throw new CliError('the login code expired before it was approved: run `agent-mail login` again', EXIT.auth, 'expired_token')
    })

  program
    .command('signup')
    .description('create an account and an organization; the emailed code is asked for (or given with --code)')
    .requiredOption('--email <address>', 'your email address')
    .option('--name <name>', 'your name')
    .option('--org-name <name>', 'the new organization')
    .option('--accept-terms', 'accept the terms of service (required)')
    .option('--code <code>', 'the 6-digit code from the email (asked for when omitted)')
    .option('--password <password>', 'a password for signing in later (or AGENT_MAIL_PASSWORD; asked for when omitted)')
    .action(async (opts: { email: string; name?: string; orgName?: string; acceptTerms?: boolean; code?: string; password?: string }, cmd: Command) => {
      const { api, json } = globals(cmd)
      if (!opts.acceptTerms) throw new CliError('signup needs --accept-terms', EXIT.usage)
      const started = await api.sdk.post('/v1/cli/signup/start', {
        auth: false,
        body: { email: opts.email, name: opts.name, org_name: opts.orgName, terms_accepted: true },
      })
      say(`A verification code was sent to ${opts.email}.`)
      // an empty option or variable counts as not given
      const code = opts.code || (await ask('Verification code:'))
      const password = opts.password || process.env.AGENT_MAIL_PASSWORD || (await ask('Choose a password (12+ characters):', { secret: true }))
      if (!code || !password) throw new CliError('signup needs the verification code and a password', EXIT.usage)
      const tokens = await api.sdk.post('/v1/cli/signup/verify', {
        auth: false,
        body: { signup_token: started.signup_token, verification_code: code, password },
      })
      save(api, tokens)
      if (json) printJson({ org_id: tokens.org_id, user_id: tokens.user_id, inbox: tokens.inbox })
      else
        say(
          `${color.green('Signed up')}: organization ${tokens.org_id}${tokens.inbox ? `, inbox ${color.bold(tokens.inbox.address)}` : ''}. You are logged in.`,
        )
    })

  program
    .command('whoami')
    .description('the organization and credential you are acting with')
    .action((_opts, cmd: Command) =>
      answer(
        cmd,
        api => api.sdk.get('/v1/whoami'),
        me => listing(Object.entries(me), ['field', 'value'], ([k, v]) => [k, String(v)]),
      ),
    )

  program
    .command('logout')
    .description('forget the saved login (and revoke it on the service)')
    .action(async (_opts, cmd: Command) => {
      const { api } = globals(cmd)
      const token = await api.bearer().catch(() => null)
      if (token) await api.revoke(token).catch(() => {})
      removeCredentials()
      say('Logged out.')
    })
}
