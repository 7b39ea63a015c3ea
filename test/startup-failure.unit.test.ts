/**
 * A port below 1024 the process may not bind is explained (which setting, and how to fix it),
 * not reported as an error with a stack: as the container's own user binding SMTP_PORT=25.
 */
import { expect, test } from 'bun:test'
import { realpathSync } from 'node:fs'
import { explainStartupFailure } from '../src/startup-failure'

const canDropPrivileges = process.getuid?.() === 0 && Bun.which('setpriv') !== null

/** The error Bun raises when an unprivileged user listens on `port`, captured in a child process run as nobody. */
async function unprivilegedListenError(port: number, serve: boolean): Promise<{ code: string; port?: number; message: string }> {
  const listen = serve
    ? `Bun.serve({ hostname: '127.0.0.1', port: ${port}, fetch: () => new Response('') })`
    : `Bun.listen({ hostname: '127.0.0.1', port: ${port}, socket: { data() {} } })`
  const script = `try { ${listen}; console.log('{}') } catch (e) { console.log(JSON.stringify({ code: e.code, port: e.port, message: e.message })) }`
  const child = Bun.spawn(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', realpathSync(process.execPath), '-e', script], {
    env: { HOME: '/tmp', PATH: process.env.PATH },
    stdout: 'pipe',
  })
  return JSON.parse((await new Response(child.stdout).text()).trim())
}

test.skipIf(!canDropPrivileges)('SMTP_PORT 25 and PORT 80 without the right to bind them: the setting, the port and the fixes, no stack', async () => {
  const env = { SMTP_PORT: '25', PORT: '80', HOST: '127.0.0.1' }
  for (const [serve, key, port] of [
    [false, 'SMTP_PORT', 25],
    [true, 'PORT', 80],
  ] as const) {
    const error = await unprivilegedListenError(port, serve)
    expect(error.code).toBe('EACCES')
    const message = explainStartupFailure(error, env, 'bun src/index.ts')!
    expect(message).toContain(`${key} ${port} on 127.0.0.1: binding a port below 1024 needs a right`)
    expect(message).toContain('CAP_NET_BIND_SERVICE')
    expect(message).toContain(`net.ipv4.ip_unprivileged_port_start=${port}`)
    expect(message).not.toMatch(/\n\s+at |EACCES/)
  }
})
