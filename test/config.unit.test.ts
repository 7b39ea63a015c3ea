import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../src/config'

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env)
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return e as ConfigError
  }
  throw new Error('configuration was accepted')
}

describe('loadConfig', () => {
  test('defaults for an empty environment', () => {
    const c = loadConfig({})
    expect(c.NODE_ENV).toBe('development')
    expect(c.PORT).toBe(3000)
    expect(c.SMTP_PORT).toBe(2525)
    expect(c.HOST).toBe('127.0.0.1')
    expect(c.DATABASE_URL).toBeUndefined()
    expect(c.ROLES).toBe('api,smtp,worker')
    expect(c.roles).toEqual(['api', 'smtp', 'worker'])
    expect(c.PUBLIC_URL).toBe('http://localhost:3000')
    expect(c.siteUrl).toBe('http://localhost:3000')
    expect(c.MAX_BODY_BYTES).toBe(1_048_576)
    expect(c.TRUST_PROXY).toBe(false)
    expect(c.RATE_LIMIT_LEASE).toBe(20)
  })

  test('empty strings count as unset', () => {
    expect(loadConfig({ PORT: '', ROLES: '' }).PORT).toBe(3000)
  })

  test('numbers, booleans and roles are converted', () => {
    const c = loadConfig({ PORT: '8080', TRUST_PROXY: '1', ROLES: 'api,worker,api', SITE_URL: 'https://example.test', MAX_BODY_BYTES: '2048' })
    expect(c.PORT).toBe(8080)
    expect(c.TRUST_PROXY).toBe(true)
    expect(c.roles).toEqual(['api', 'worker'])
    expect(c.siteUrl).toBe('https://example.test')
    expect(c.MAX_BODY_BYTES).toBe(2048)
    expect(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false)
  })

  test('a bad PORT and a bad ROLES are reported together, each by name', () => {
    const e = configError({ PORT: 'eighty', ROLES: 'api,mailer' })
    expect(e.message).toMatch(/^invalid configuration/)
    expect(e.message).toMatch(/\bPORT: /)
    expect(e.message).toMatch(/\bROLES: /)
    expect(e.message).not.toMatch(/SMTP_PORT/)
  })

  test('out-of-range values and malformed URLs are rejected', () => {
    expect(configError({ PORT: '70000' }).message).toMatch(/\bPORT: /)
    expect(configError({ MAX_BODY_BYTES: '10' }).message).toMatch(/MAX_BODY_BYTES: /)
    expect(configError({ PUBLIC_URL: 'http://x.test/v1' }).message).toMatch(/PUBLIC_URL: /)
    expect(configError({ DATABASE_URL: 'mysql://x' }).message).toMatch(/DATABASE_URL: /)
    expect(configError({ SECRET_KEY: 'short' }).message).toMatch(/SECRET_KEY: /)
    expect(configError({ TRUST_PROXY: 'yes' }).message).toMatch(/TRUST_PROXY: /)
    expect(configError({ LOG_LEVEL: 'verbose' }).message).toMatch(/LOG_LEVEL: /)
  })

  test('production without SECRET_KEY is a bad setting, named with the others, before anything starts', () => {
    const e = configError({ NODE_ENV: 'production', PORT: 'x' })
    expect(e.problems.map(p => p.key).sort()).toEqual(['PORT', 'SECRET_KEY'])
    expect(e.message).toMatch(/\bSECRET_KEY: got nothing; allowed: required when NODE_ENV is production/)
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'k'.repeat(32) }).SECRET_KEY).toBe('k'.repeat(32))
    expect(loadConfig({}).SECRET_KEY).toBeUndefined()
  })

  test('each bad key is named once', () => {
    const e = configError({ PORT: 'x' })
    expect(e.message.match(/\bPORT: /g)).toHaveLength(1)
  })
})
