/*
 * The guest runtime: the web platform a function sees inside QuickJS. It is evaluated as a
 * global script in every fresh sandbox, before the function's module. Everything here is plain
 * JavaScript except three host entry points the sandbox installs:
 *   __host(op, json)        a synchronous host operation (logs, random bytes, digests, HMAC)
 *   __hostAsync(op, json)   an asynchronous one, returning a promise (fetch, timers)
 *   __bytes(op, value, offset, length)   a byte conversion done natively by the host (UTF-8
 *                           and base64 of an ArrayBuffer or a string), a plain value back
 * Values cross the boundary as JSON strings, strings and ArrayBuffers, so no host object or
 * handle ever reaches the guest.
 */
;(function () {
  'use strict'
  const host = globalThis.__host
  const hostAsync = globalThis.__hostAsync
  const bytesHost = globalThis.__bytes
  delete globalThis.__host
  delete globalThis.__hostAsync
  delete globalThis.__bytes
  const call = (op, arg) => {
    const out = host(op, JSON.stringify(arg === undefined ? null : arg))
    return out === undefined ? undefined : JSON.parse(out)
  }
  const callAsync = (op, arg) => hostAsync(op, JSON.stringify(arg === undefined ? null : arg)).then(out => JSON.parse(out))
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false })

  // ---- base64 and UTF-8 ----
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  const B64_INDEX = {}
  for (let i = 0; i < B64.length; i++) B64_INDEX[B64[i]] = i
  function jsBytesToBase64(bytes) {
    let out = ''
    let i = 0
    for (; i + 2 < bytes.length; i += 3) {
      const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2]
      out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63]
    }
    if (i < bytes.length) {
      const n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8)
      out += B64[n >> 18] + B64[(n >> 12) & 63] + (i + 1 < bytes.length ? B64[(n >> 6) & 63] : '=') + '='
    }
    return out
  }
  function jsBase64ToBytes(text) {
    const clean = String(text)
      .replace(/[\t\n\f\r ]/g, '')
      .replace(/=+$/, '')
    if (/[^A-Za-z0-9+/]/.test(clean) || clean.length % 4 === 1)
      throw new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError')
    const out = new Uint8Array(Math.floor((clean.length * 3) / 4))
    let bits = 0
    let value = 0
    let j = 0
    for (let i = 0; i < clean.length; i++) {
      value = (value << 6) | B64_INDEX[clean[i]]
      bits += 6
      if (bits >= 8) {
        bits -= 8
        out[j++] = (value >> bits) & 255
      }
    }
    return out
  }
  function jsUtf8Encode(text) {
    const s = String(text)
    const out = []
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i)
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1)
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)
          i++
        } else c = 0xfffd
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd
      if (c < 0x80) out.push(c)
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63))
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
    }
    return new Uint8Array(out)
  }
  function jsUtf8Decode(bytes) {
    let out = ''
    for (let i = 0; i < bytes.length; ) {
      const b = bytes[i]
      let c = 0xfffd
      let n = 1
      if (b < 0x80) c = b
      else if (b >= 0xc2 && b < 0xe0 && (bytes[i + 1] & 0xc0) === 0x80) (c = ((b & 31) << 6) | (bytes[i + 1] & 63)), (n = 2)
      else if (b >= 0xe0 && b < 0xf0 && (bytes[i + 1] & 0xc0) === 0x80 && (bytes[i + 2] & 0xc0) === 0x80) {
        c = ((b & 15) << 12) | ((bytes[i + 1] & 63) << 6) | (bytes[i + 2] & 63)
        n = 3
        if (c < 0x800 || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd
      } else if (b >= 0xf0 && b < 0xf5 && (bytes[i + 1] & 0xc0) === 0x80 && (bytes[i + 2] & 0xc0) === 0x80 && (bytes[i + 3] & 0xc0) === 0x80) {
        c = ((b & 7) << 18) | ((bytes[i + 1] & 63) << 12) | ((bytes[i + 2] & 63) << 6) | (bytes[i + 3] & 63)
        n = 4
        if (c < 0x10000 || c > 0x10ffff) c = 0xfffd
      }
      out += c > 0xffff ? String.fromCharCode(0xd800 + ((c - 0x10000) >> 10), 0xdc00 + ((c - 0x10000) & 1023)) : String.fromCharCode(c)
      i += n
    }
    return out
  }
  // The host converts natively (QuickJS interprets the loops above at about 5 MB/s); below
  // NATIVE_MIN the call costs more than the loop. A string the host cannot carry intact (a NUL,
  // a lone surrogate) and a decoded text with a NUL stay with the loops.
  const NATIVE_MIN = 64
  const INVALID_BASE64 = () => new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError')
  function bytesToBase64(bytes) {
    if (bytes.length < NATIVE_MIN) return jsBytesToBase64(bytes)
    return bytesHost('base64_encode', bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }
  function base64ToBytes(text) {
    text = String(text)
    if (text.length < NATIVE_MIN) return jsBase64ToBytes(text)
    const buffer = bytesHost('base64_decode', text)
    if (buffer === undefined) throw INVALID_BASE64()
    return new Uint8Array(buffer)
  }
  function utf8Encode(text) {
    const s = String(text)
    if (s.length < NATIVE_MIN || s.indexOf('\0') !== -1 || !s.isWellFormed()) return jsUtf8Encode(s)
    return new Uint8Array(bytesHost('utf8_encode', s))
  }
  function utf8Decode(bytes) {
    if (bytes.length < NATIVE_MIN) return jsUtf8Decode(bytes)
    const text = bytesHost('utf8_decode', bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return text === undefined ? jsUtf8Decode(bytes) : text
  }
  function toBytes(data) {
    if (data instanceof Uint8Array) return data
    if (data instanceof ArrayBuffer) return new Uint8Array(data)
    if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    throw new TypeError('expected an ArrayBuffer or a typed array')
  }

  class DOMException extends Error {
    constructor(message = '', name = 'Error') {
      super(message)
      this.name = name
    }
  }
  define('DOMException', DOMException)

  class TextEncoder {
    get encoding() {
      return 'utf-8'
    }
    encode(text = '') {
      return utf8Encode(text)
    }
  }
  class TextDecoder {
    constructor(label = 'utf-8') {
      if (!/^utf-?8$/i.test(label)) throw new RangeError(`TextDecoder: only utf-8 is supported, not ${label}`)
    }
    get encoding() {
      return 'utf-8'
    }
    decode(data) {
      if (data === undefined) return ''
      const bytes = toBytes(data)
      const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
      return utf8Decode(start ? bytes.subarray(start) : bytes)
    }
  }
  define('TextEncoder', TextEncoder)
  define('TextDecoder', TextDecoder)
  define('btoa', text => {
    const s = String(text)
    const bytes = new Uint8Array(s.length)
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c > 255) throw new DOMException('btoa: the string contains characters outside of the Latin1 range', 'InvalidCharacterError')
      bytes[i] = c
    }
    return bytesToBase64(bytes)
  })
  define('atob', text => {
    const bytes = base64ToBytes(text)
    let out = ''
    for (let i = 0; i < bytes.length; i++) out += String.fromCharCode(bytes[i])
    return out
  })

  // ---- console ----
  function format(value, depth = 0) {
    if (typeof value === 'string') return depth ? JSON.stringify(value) : value
    if (value instanceof Error) return value.stack ? `${value.name}: ${value.message}\n${value.stack}` : `${value.name}: ${value.message}`
    if (typeof value === 'function') return `[Function ${value.name || 'anonymous'}]`
    if (typeof value === 'bigint') return `${value}n`
    if (value === undefined || value === null || typeof value !== 'object') return String(value)
    if (depth > 3) return Array.isArray(value) ? '[Array]' : '[Object]'
    try {
      if (Array.isArray(value)) return `[ ${value.map(v => format(v, depth + 1)).join(', ')} ]`
      if (value instanceof Map) return `Map(${value.size}) { ${[...value].map(([k, v]) => `${format(k, depth + 1)} => ${format(v, depth + 1)}`).join(', ')} }`
      if (value instanceof Set) return `Set(${value.size}) { ${[...value].map(v => format(v, depth + 1)).join(', ')} }`
      return `{ ${Object.keys(value)
        .map(k => `${k}: ${format(value[k], depth + 1)}`)
        .join(', ')} }`
    } catch {
      return '[object]'
    }
  }
  const log =
    level =>
    (...args) => {
      call('log', [level, args.map(a => format(a)).join(' ')])
    }
  define('console', { log: log('log'), info: log('info'), debug: log('debug'), warn: log('warn'), error: log('error'), trace: log('debug') })

  // ---- crypto ----
  function getRandomValues(array) {
    if (!ArrayBuffer.isView(array) || array instanceof Float32Array || array instanceof Float64Array)
      throw new TypeError('getRandomValues: expected an integer typed array')
    if (array.byteLength > 65536) throw new DOMException('getRandomValues: at most 65536 bytes', 'QuotaExceededError')
    const bytes = base64ToBytes(call('random', array.byteLength))
    new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(bytes)
    return array
  }
  function randomUUID() {
    const b = getRandomValues(new Uint8Array(16))
    b[6] = (b[6] & 0x0f) | 0x40
    b[8] = (b[8] & 0x3f) | 0x80
    const h = [...b].map(x => x.toString(16).padStart(2, '0')).join('')
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
  const HASHES = { 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' }
  const hashName = algorithm => {
    const name = typeof algorithm === 'string' ? algorithm : algorithm && (typeof algorithm.name === 'string' ? algorithm.name : algorithm.hash)
    const hash = HASHES[String(typeof name === 'object' ? name.name : name).toUpperCase()]
    if (!hash) throw new DOMException(`unsupported algorithm ${JSON.stringify(name)}`, 'NotSupportedError')
    return hash
  }
  class CryptoKey {
    constructor(hash, secret, usages, extractable) {
      this.type = 'secret'
      this.algorithm = { name: 'HMAC', hash: { name: Object.keys(HASHES).find(k => HASHES[k] === hash) } }
      this.usages = usages
      this.extractable = extractable
      Object.defineProperty(this, '_secret', { value: secret })
      Object.defineProperty(this, '_hash', { value: hash })
    }
  }
  const subtle = {
    async digest(algorithm, data) {
      return base64ToBytes(call('digest', [hashName(algorithm), bytesToBase64(toBytes(data))])).buffer
    },
    async importKey(format, keyData, algorithm, extractable, usages) {
      if (format !== 'raw') throw new DOMException('importKey: only the raw format is supported', 'NotSupportedError')
      if (!algorithm || String(algorithm.name).toUpperCase() !== 'HMAC') throw new DOMException('importKey: only HMAC is supported', 'NotSupportedError')
      return new CryptoKey(hashName(algorithm.hash), bytesToBase64(toBytes(keyData)), usages || [], !!extractable)
    },
    async sign(algorithm, key, data) {
      if (!(key instanceof CryptoKey)) throw new TypeError('sign: expected a CryptoKey')
      return base64ToBytes(call('hmac', [key._hash, key._secret, bytesToBase64(toBytes(data))])).buffer
    },
    async verify(algorithm, key, signature, data) {
      const expected = new Uint8Array(await subtle.sign(algorithm, key, data))
      const given = toBytes(signature)
      let diff = expected.length ^ given.length
      for (let i = 0; i < expected.length; i++) diff |= expected[i] ^ (given[i] || 0)
      return diff === 0
    },
  }
  define('crypto', { getRandomValues, randomUUID, subtle })
  define('CryptoKey', CryptoKey)

  // ---- timers ----
  const timers = new Map()
  let nextTimer = 1
  define('setTimeout', (fn, ms = 0, ...args) => {
    if (typeof fn !== 'function') throw new TypeError('setTimeout: the callback must be a function')
    const id = nextTimer++
    const op = hostAsync('sleep', JSON.stringify(Math.max(0, Number(ms) || 0)))
    timers.set(id, true)
    op.then(() => {
      if (!timers.delete(id)) return
      fn(...args)
    })
    timers.set(id, op)
    return id
  })
  define('clearTimeout', id => {
    const op = timers.get(id)
    if (!op) return
    timers.delete(id)
    call('cancel', op.__opId)
  })
  define('queueMicrotask', fn => {
    Promise.resolve().then(fn)
  })

  // ---- structuredClone ----
  function clone(value, seen) {
    if (value === null || typeof value !== 'object') {
      if (typeof value === 'function' || typeof value === 'symbol') throw new DOMException(`${String(value)} could not be cloned`, 'DataCloneError')
      return value
    }
    if (seen.has(value)) return seen.get(value)
    let out
    if (value instanceof Date) out = new Date(value.getTime())
    else if (value instanceof RegExp) out = new RegExp(value.source, value.flags)
    else if (value instanceof ArrayBuffer) out = value.slice(0)
    else if (ArrayBuffer.isView(value)) out = new value.constructor(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength))
    else if (value instanceof Map) {
      out = new Map()
      seen.set(value, out)
      for (const [k, v] of value) out.set(clone(k, seen), clone(v, seen))
      return out
    } else if (value instanceof Set) {
      out = new Set()
      seen.set(value, out)
      for (const v of value) out.add(clone(v, seen))
      return out
    } else if (value instanceof Error) out = new value.constructor(value.message)
    else {
      out = Array.isArray(value) ? [] : {}
      seen.set(value, out)
      for (const k of Object.keys(value)) out[k] = clone(value[k], seen)
      return out
    }
    seen.set(value, out)
    return out
  }
  define('structuredClone', value => clone(value, new Map()))

  // ---- events and abort ----
  class Event {
    constructor(type) {
      this.type = type
      this.defaultPrevented = false
    }
    preventDefault() {
      this.defaultPrevented = true
    }
  }
  class EventTarget {
    constructor() {
      Object.defineProperty(this, '_listeners', { value: new Map() })
    }
    addEventListener(type, fn, opts) {
      if (!this._listeners.has(type)) this._listeners.set(type, [])
      this._listeners.get(type).push({ fn, once: !!(opts && opts.once) })
    }
    removeEventListener(type, fn) {
      const list = this._listeners.get(type)
      if (list)
        this._listeners.set(
          type,
          list.filter(l => l.fn !== fn),
        )
    }
    dispatchEvent(event) {
      const list = this._listeners.get(event.type) || []
      this._listeners.set(
        event.type,
        list.filter(l => !l.once),
      )
      for (const l of list) typeof l.fn === 'function' ? l.fn.call(this, event) : l.fn.handleEvent(event)
      const handler = this['on' + event.type]
      if (typeof handler === 'function') handler.call(this, event)
      return !event.defaultPrevented
    }
  }
  class AbortSignal extends EventTarget {
    constructor() {
      super()
      this.aborted = false
      this.reason = undefined
      this.onabort = null
    }
    throwIfAborted() {
      if (this.aborted) throw this.reason
    }
    static abort(reason) {
      const c = new AbortController()
      c.abort(reason)
      return c.signal
    }
    static timeout(ms) {
      const c = new AbortController()
      setTimeout(() => c.abort(new DOMException('The operation timed out.', 'TimeoutError')), ms)
      return c.signal
    }
  }
  class AbortController {
    constructor() {
      this.signal = new AbortSignal()
    }
    abort(reason = new DOMException('This operation was aborted', 'AbortError')) {
      if (this.signal.aborted) return
      this.signal.aborted = true
      this.signal.reason = reason
      this.signal.dispatchEvent(new Event('abort'))
    }
  }
  define('Event', Event)
  define('EventTarget', EventTarget)
  define('AbortSignal', AbortSignal)
  define('AbortController', AbortController)

  // ---- URLSearchParams and URL ----
  const encodeQuery = s =>
    encodeURIComponent(s)
      .replace(/%20/g, '+')
      .replace(/[!'()~]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase())
  const decodeQuery = s => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '))
    } catch {
      return s
    }
  }
  class URLSearchParams {
    constructor(init = '') {
      this._list = []
      if (typeof init === 'string') {
        for (const part of init.replace(/^\?/, '').split('&')) {
          if (!part) continue
          const at = part.indexOf('=')
          this._list.push(at < 0 ? [decodeQuery(part), ''] : [decodeQuery(part.slice(0, at)), decodeQuery(part.slice(at + 1))])
        }
      } else if (init instanceof URLSearchParams) this._list = init._list.map(p => [p[0], p[1]])
      else if (init && typeof init[Symbol.iterator] === 'function') for (const [k, v] of init) this._list.push([String(k), String(v)])
      else if (init && typeof init === 'object') for (const k of Object.keys(init)) this._list.push([k, String(init[k])])
    }
    _changed() {
      if (this._url) this._url._search = this._list.length ? '?' + this.toString() : ''
    }
    append(k, v) {
      this._list.push([String(k), String(v)])
      this._changed()
    }
    delete(k) {
      this._list = this._list.filter(p => p[0] !== k)
      this._changed()
    }
    get(k) {
      const p = this._list.find(p => p[0] === k)
      return p ? p[1] : null
    }
    getAll(k) {
      return this._list.filter(p => p[0] === k).map(p => p[1])
    }
    has(k) {
      return this._list.some(p => p[0] === k)
    }
    set(k, v) {
      const i = this._list.findIndex(p => p[0] === k)
      if (i < 0) this._list.push([String(k), String(v)])
      else this._list = this._list.filter((p, j) => j === i || p[0] !== k).map((p, j) => (j === i ? [p[0], String(v)] : p))
      this._changed()
    }
    sort() {
      this._list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      this._changed()
    }
    forEach(fn, self) {
      for (const [k, v] of this._list) fn.call(self, v, k, this)
    }
    keys() {
      return this._list.map(p => p[0])[Symbol.iterator]()
    }
    values() {
      return this._list.map(p => p[1])[Symbol.iterator]()
    }
    entries() {
      return this._list.map(p => [p[0], p[1]])[Symbol.iterator]()
    }
    [Symbol.iterator]() {
      return this.entries()
    }
    get size() {
      return this._list.length
    }
    toString() {
      return this._list.map(([k, v]) => `${encodeQuery(k)}=${encodeQuery(v)}`).join('&')
    }
  }
  define('URLSearchParams', URLSearchParams)

  const SPECIAL_PORTS = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21' }
  function normalizePath(path) {
    const out = []
    for (const seg of path.split('/').slice(1)) {
      if (seg === '..' || seg.toLowerCase() === '%2e%2e') out.pop()
      else if (seg !== '.' && seg.toLowerCase() !== '%2e') out.push(seg)
    }
    const last = path.split('/').pop()
    if (last === '.' || last === '..') out.push('')
    return '/' + out.join('/')
  }
  const encodePath = s => s.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g, c => encodeURIComponent(c))
  const encodeSearch = s => s.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/g, c => encodeURIComponent(c))
  class URL {
    constructor(input, base) {
      let s = String(input)
        .trim()
        .replace(/[\t\n\r]/g, '')
      const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(s)
      if (!scheme) {
        if (base === undefined) throw new TypeError(`Invalid URL: ${s}`)
        const b = base instanceof URL ? base : new URL(base)
        if (!b._special) throw new TypeError(`Invalid URL: ${s}`)
        if (s.startsWith('//')) s = b.protocol + s
        else if (s.startsWith('/')) s = b.origin + s
        else if (s.startsWith('?')) s = b.origin + b.pathname + s
        else if (s.startsWith('#')) s = b.origin + b.pathname + b.search + s
        else s = b.origin + b.pathname.replace(/[^/]*$/, '') + s
        return new URL(s)
      }
      this._protocol = scheme[1].toLowerCase() + ':'
      let rest = s.slice(scheme[0].length)
      const hashAt = rest.indexOf('#')
      this._hash = hashAt >= 0 ? '#' + encodeSearch(rest.slice(hashAt + 1)) : ''
      if (hashAt >= 0) rest = rest.slice(0, hashAt)
      if (this._hash === '#') this._hash = ''
      const queryAt = rest.indexOf('?')
      this._search = queryAt >= 0 ? '?' + encodeSearch(rest.slice(queryAt + 1)) : ''
      if (this._search === '?') this._search = ''
      if (queryAt >= 0) rest = rest.slice(0, queryAt)
      this._special = this._protocol in SPECIAL_PORTS
      this._username = ''
      this._password = ''
      this._hostname = ''
      this._port = ''
      if (this._special || rest.startsWith('//')) {
        rest = rest.replace(/^[/\\]*/, '')
        const end = rest.search(/[/\\]/)
        let authority = end < 0 ? rest : rest.slice(0, end)
        rest = end < 0 ? '' : rest.slice(end).replace(/\\/g, '/')
        const at = authority.lastIndexOf('@')
        if (at >= 0) {
          const cred = authority.slice(0, at)
          authority = authority.slice(at + 1)
          const colon = cred.indexOf(':')
          this._username = colon < 0 ? cred : cred.slice(0, colon)
          this._password = colon < 0 ? '' : cred.slice(colon + 1)
        }
        const port = /:(\d*)$/.exec(authority)
        if (port && !authority.endsWith(']')) {
          authority = authority.slice(0, port.index)
          this._port = port[1] === '' || port[1] === SPECIAL_PORTS[this._protocol] ? '' : String(Number(port[1]))
          if (Number(port[1]) > 65535) throw new TypeError(`Invalid URL: ${s}`)
        }
        if (this._special && !authority) throw new TypeError(`Invalid URL: ${s}`)
        if (/[\s<>^|%]/.test(authority.replace(/%[0-9a-f]{2}/gi, ''))) throw new TypeError(`Invalid URL: ${s}`)
        this._hostname = authority.toLowerCase()
        this._pathname = this._special ? normalizePath(encodePath(rest || '/')) : encodePath(rest)
      } else {
        this._pathname = encodePath(rest)
      }
      this._params = new URLSearchParams(this._search)
      this._params._url = this
    }
    get protocol() {
      return this._protocol
    }
    get username() {
      return this._username
    }
    get password() {
      return this._password
    }
    get hostname() {
      return this._hostname
    }
    set hostname(v) {
      this._hostname = String(v).toLowerCase()
    }
    get port() {
      return this._port
    }
    set port(v) {
      this._port = String(v) === SPECIAL_PORTS[this._protocol] ? '' : String(v)
    }
    get host() {
      return this._hostname + (this._port ? ':' + this._port : '')
    }
    get origin() {
      return this._special ? `${this._protocol}//${this.host}` : 'null'
    }
    get pathname() {
      return this._pathname
    }
    set pathname(v) {
      const p = String(v)
      this._pathname = normalizePath(encodePath(p.startsWith('/') ? p : '/' + p))
    }
    get search() {
      return this._search
    }
    set search(v) {
      const q = String(v).replace(/^\?/, '')
      this._search = q ? '?' + encodeSearch(q) : ''
      this._params = new URLSearchParams(this._search)
      this._params._url = this
    }
    get searchParams() {
      return this._params
    }
    get hash() {
      return this._hash
    }
    set hash(v) {
      const h = String(v).replace(/^#/, '')
      this._hash = h ? '#' + encodeSearch(h) : ''
    }
    get href() {
      const cred = this._username ? this._username + (this._password ? ':' + this._password : '') + '@' : ''
      const authority = this._special || this._hostname ? '//' + cred + this.host : ''
      return this._protocol + authority + this._pathname + this._search + this._hash
    }
    toString() {
      return this.href
    }
    toJSON() {
      return this.href
    }
    static canParse(input, base) {
      try {
        new URL(input, base)
        return true
      } catch {
        return false
      }
    }
  }
  define('URL', URL)

  // ---- Headers, bodies, Request, Response ----
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
  class Headers {
    constructor(init) {
      this._map = new Map()
      if (init instanceof Headers) for (const [k, v] of init) this.append(k, v)
      else if (Array.isArray(init)) for (const [k, v] of init) this.append(k, v)
      else if (init && typeof init === 'object') for (const k of Object.keys(init)) this.append(k, init[k])
    }
    _name(name) {
      const n = String(name).toLowerCase()
      if (!TOKEN.test(n)) throw new TypeError(`Headers: invalid header name ${JSON.stringify(name)}`)
      return n
    }
    _value(value) {
      const v = String(value).trim()
      if (/[\r\n\0]/.test(v)) throw new TypeError('Headers: invalid header value')
      return v
    }
    append(name, value) {
      const n = this._name(name)
      const v = this._value(value)
      this._map.set(n, this._map.has(n) ? `${this._map.get(n)}, ${v}` : v)
    }
    set(name, value) {
      this._map.set(this._name(name), this._value(value))
    }
    get(name) {
      const v = this._map.get(String(name).toLowerCase())
      return v === undefined ? null : v
    }
    has(name) {
      return this._map.has(String(name).toLowerCase())
    }
    delete(name) {
      this._map.delete(String(name).toLowerCase())
    }
    forEach(fn, self) {
      for (const [k, v] of this) fn.call(self, v, k, this)
    }
    *entries() {
      yield* [...this._map.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))
    }
    *keys() {
      for (const [k] of this.entries()) yield k
    }
    *values() {
      for (const [, v] of this.entries()) yield v
    }
    [Symbol.iterator]() {
      return this.entries()
    }
  }
  define('Headers', Headers)

  /** A body held as bytes; `type` is the content type it implies, if any. */
  function extractBody(body) {
    if (body === undefined || body === null) return { bytes: null, type: null }
    if (typeof body === 'string') return { bytes: utf8Encode(body), type: 'text/plain;charset=UTF-8' }
    if (body instanceof URLSearchParams) return { bytes: utf8Encode(body.toString()), type: 'application/x-www-form-urlencoded;charset=UTF-8' }
    if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return { bytes: new Uint8Array(toBytes(body)), type: null }
    return { bytes: utf8Encode(String(body)), type: 'text/plain;charset=UTF-8' }
  }
  class Body {
    _initBody(body, headers) {
      const { bytes, type } = extractBody(body)
      this._bytes = bytes
      this._used = false
      if (type && !headers.has('content-type')) headers.set('content-type', type)
    }
    get bodyUsed() {
      return this._used
    }
    get body() {
      return this._bytes
    }
    _consume() {
      if (this._used) return Promise.reject(new TypeError('Body has already been used'))
      this._used = true
      return Promise.resolve(this._bytes || new Uint8Array(0))
    }
    async arrayBuffer() {
      const b = await this._consume()
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
    }
    async bytes() {
      return new Uint8Array(await this.arrayBuffer())
    }
    async text() {
      return utf8Decode(await this._consume())
    }
    async json() {
      return JSON.parse(await this.text())
    }
    async formData() {
      throw new TypeError('formData() is not supported in functions')
    }
  }
  const METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH']
  class Request extends Body {
    constructor(input, init = {}) {
      super()
      const from = input instanceof Request ? input : null
      this.url = from ? from.url : new URL(String(input)).href
      const method = String(init.method || (from ? from.method : 'GET'))
      this.method = METHODS.includes(method.toUpperCase()) ? method.toUpperCase() : method
      this.headers = new Headers(init.headers || (from ? from.headers : undefined))
      this.signal = init.signal || (from ? from.signal : new AbortController().signal)
      this.redirect = init.redirect || (from ? from.redirect : 'follow')
      const body = init.body !== undefined ? init.body : from ? from._bytes : null
      if (body !== null && body !== undefined && (this.method === 'GET' || this.method === 'HEAD'))
        throw new TypeError('Request with GET/HEAD method cannot have body.')
      this._initBody(body, this.headers)
    }
    clone() {
      return new Request(this)
    }
  }
  define('Request', Request)
  class Response extends Body {
    constructor(body = null, init = {}) {
      super()
      this.status = init.status === undefined ? 200 : Number(init.status)
      if (!(this.status >= 200 && this.status <= 599)) throw new RangeError(`Response: status ${init.status} is outside 200-599`)
      this.statusText = init.statusText === undefined ? '' : String(init.statusText)
      this.headers = new Headers(init.headers)
      this.url = ''
      this.redirected = false
      this.type = 'default'
      this._initBody(body, this.headers)
    }
    get ok() {
      return this.status >= 200 && this.status <= 299
    }
    clone() {
      const r = new Response(this._bytes, { status: this.status, statusText: this.statusText, headers: this.headers })
      r.url = this.url
      return r
    }
    static json(data, init = {}) {
      const headers = new Headers(init.headers)
      if (!headers.has('content-type')) headers.set('content-type', 'application/json')
      return new Response(JSON.stringify(data), { ...init, headers })
    }
    static redirect(url, status = 302) {
      return new Response(null, { status, headers: { location: new URL(url).href } })
    }
    static error() {
      const r = new Response(null, { status: 200 })
      r.status = 0
      r.type = 'error'
      return r
    }
  }
  define('Response', Response)

  // ---- fetch, through the host (SSRF guard, subrequest cap, timeouts) ----
  define('fetch', async (input, init) => {
    const req = new Request(input, init)
    req.signal.throwIfAborted()
    const op = hostAsync(
      'fetch',
      JSON.stringify({
        url: req.url,
        method: req.method,
        headers: [...req.headers],
        body: req._bytes ? bytesToBase64(req._bytes) : null,
        redirect: req.redirect,
      }),
    )
    const aborted = new Promise((_, reject) =>
      req.signal.addEventListener('abort', () => {
        call('cancel', op.__opId)
        reject(req.signal.reason)
      }),
    )
    const out = JSON.parse(await Promise.race([op, aborted]))
    if (out.error) throw new TypeError(`fetch failed: ${out.error}`)
    const res = new Response(out.body ? base64ToBytes(out.body) : null, { status: out.status, statusText: out.statusText, headers: out.headers })
    res.url = out.url
    res.redirected = !!out.redirected
    return res
  })

  // ---- the invocation entry point the host calls ----
  define('__invoke', async (mod, requestJson, envJson) => {
    const handler = mod && mod.default
    if (!handler || typeof handler.fetch !== 'function') throw new TypeError('the module has no default export with a fetch(request, env) method')
    const r = JSON.parse(requestJson)
    const request = new Request(r.url, { method: r.method, headers: r.headers, body: r.body === null ? null : base64ToBytes(r.body) })
    const env = Object.freeze(JSON.parse(envJson))
    const response = await handler.fetch(request, env, { waitUntil() {}, passThroughOnException() {} })
    if (!(response instanceof Response)) throw new TypeError('fetch(request, env) must return a Response')
    const bytes = response._bytes || new Uint8Array(0)
    // checked before encoding: base64 in here is slow for a body that is refused anyway
    if (bytes.length > call('response_limit')) {
      call('response_too_large', bytes.length)
      throw new RangeError(`the response body of ${bytes.length} bytes is over the limit`)
    }
    return JSON.stringify({ status: response.status, headers: [...response.headers], body: bytesToBase64(bytes) })
  })
  define('__check', mod => {
    const handler = mod && mod.default
    if (handler === undefined) throw new TypeError('the module has no default export; export default { async fetch(request, env) { ... } }')
    if (!handler || typeof handler.fetch !== 'function') throw new TypeError('the default export has no fetch(request, env) method')
  })
})()
