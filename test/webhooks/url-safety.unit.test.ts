/** classifyAddress and checkWebhookUrl without the API: which addresses a webhook may reach. */
import { describe, expect, test } from 'bun:test'
import { memoryResolver } from '../../src/dns/resolver'
import { checkWebhookUrl, classifyAddress } from '../../src/egress/url-safety'

describe('classifyAddress', () => {
  test.each(['127.0.0.1', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::ffff:7f00:1'])('%s is loopback', ip =>
    expect(classifyAddress(ip)).toBe('loopback'),
  )

  test.each([
    // IPv4 special-purpose ranges
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '10.255.255.255',
    '100.64.0.1',
    '100.127.255.255',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.8',
    '192.0.2.1',
    '192.88.99.1',
    '192.168.1.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    // IPv6: unspecified, mapped and embedded private IPv4, ULA, link- and site-local, multicast, documentation, reserved
    '::',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::10.0.0.1',
    '::ffff:0:127.0.0.1',
    '::2',
    '64:ff9b::a00:1',
    '64:ff9b:1::1',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '3fff::1',
    '100::1',
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '2001:2::1',
    '2002:a00:1::1',
    '2002:7f00:1::1',
    '64:ff9b::127.0.0.1',
    '::127.0.0.1',
    // not an address at all
    'example.com',
    '',
    '1.2.3',
    '::g',
  ])('%s is private', ip => expect(classifyAddress(ip)).toBe('private'))

  test.each([
    '93.184.216.34',
    '1.1.1.1',
    '8.8.8.8',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:93.184.216.34',
    '64:ff9b::808:808',
    '2002:5db8:d822::1',
    '2001:4860:4860::8888',
    '3fff:1000::1',
  ])('%s is public', ip => expect(classifyAddress(ip)).toBe('public'))
})

describe('checkWebhookUrl', () => {
  const resolver = memoryResolver({
    'hooks.example.com': { A: ['93.184.216.34'], AAAA: ['2606:2800:220:1:248:1893:25c8:1946'] },
    'v6only.example.com': { AAAA: ['2606:2800:220:1:248:1893:25c8:1946'] },
    'sneaky.example.com': { A: ['93.184.216.34'], AAAA: ['::1'] },
  })

  test('a public name: the address to connect to is one that was checked', async () => {
    const checked = await checkWebhookUrl('https://hooks.example.com/in', resolver, false)
    expect(checked.url.href).toBe('https://hooks.example.com/in')
    expect(checked).toMatchObject({ address: '93.184.216.34', family: 4 })
    expect(await checkWebhookUrl('https://v6only.example.com/', resolver, false)).toMatchObject({ family: 6 })
  })

  test('one private address among several is enough to refuse', async () => {
    await expect(checkWebhookUrl('https://sneaky.example.com/', resolver, false)).rejects.toMatchObject({
      code: 'validation_error',
      message: expect.stringMatching(/^url: must be publicly reachable/),
    })
  })

  test('a DNS failure is a validation error, not a server error', async () => {
    const failing = async () => {
      throw Object.assign(new Error('SERVFAIL'), { code: 'ESERVFAIL' })
    }
    await expect(checkWebhookUrl('https://hooks.example.com/', failing, false)).rejects.toMatchObject({
      code: 'validation_error',
      message: 'url: host hooks.example.com could not be resolved',
    })
  })

  test('the field name is the caller’s', async () => {
    await expect(checkWebhookUrl('nope', resolver, false, 'target')).rejects.toMatchObject({ message: 'target: must be an absolute URL' })
  })

  test('loopback allowed: only when every address is loopback, http permitted only then', async () => {
    expect((await checkWebhookUrl('http://127.0.0.1:8080/', resolver, true)).address).toBe('127.0.0.1')
    expect((await checkWebhookUrl('http://[::1]:8080/', resolver, true)).address).toBe('::1')
    await expect(checkWebhookUrl('https://sneaky.example.com/', resolver, true)).rejects.toMatchObject({ code: 'validation_error' })
    await expect(checkWebhookUrl('http://hooks.example.com/', resolver, true)).rejects.toMatchObject({ message: 'url: must be an https URL' })
    await expect(checkWebhookUrl('http://10.0.0.1/', resolver, true)).rejects.toMatchObject({ code: 'validation_error' })
  })
})
