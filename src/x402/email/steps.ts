/**
 * The `interaction.json` part of the email-native x402 flow: building the steps we send and
 * parsing, strictly, the steps a payer sends. The step's own fields are snake_case only; the x402
 * payment payload inside keeps x402's names (`x402Version`, `validAfter`), so only the envelope
 * and its payload's top level are checked for camelCase.
 */
export const STEP_FILENAME = 'interaction.json'
export const STEP_KINDS = ['challenge', 'payment', 'receipt', 'reject', 'decline'] as const
export type StepKind = (typeof STEP_KINDS)[number]

export interface Step {
  interaction_version: 1
  interaction_id: string
  protocol: 'x402.payment'
  protocol_version: 1
  step: StepKind
  step_id: string
  prev_step_id: string | null
  expires_at: string | null
  payload: Record<string, unknown>
}

export function buildStep(
  interactionId: string,
  step: StepKind,
  prevStepId: string | null,
  payload: Record<string, unknown>,
  expiresAt: Date | null = null,
): Step {
  return {
    interaction_version: 1,
    interaction_id: interactionId,
    protocol: 'x402.payment',
    protocol_version: 1,
    step,
    step_id: crypto.randomUUID(),
    prev_step_id: prevStepId,
    expires_at: expiresAt ? expiresAt.toISOString() : null,
    payload,
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const CAMEL = /[a-z][A-Z]/
const ENVELOPE = new Set(['interaction_version', 'interaction_id', 'protocol', 'protocol_version', 'step', 'step_id', 'prev_step_id', 'expires_at', 'payload'])

export type Parsed =
  | { ok: true; step: Step }
  /** `interaction_id` when it could be read: a malformed step of a known interaction is still recorded */
  | { ok: false; reason: 'malformed_step' | 'camel_case_keys' | 'unknown_step'; interaction_id: string | null; detail: string }

/** Parses an `interaction.json` part. Unknown step kinds are reported as such (ignored by the caller, never an error). */
export function parseStep(bytes: Uint8Array): Parsed {
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    return { ok: false, reason: 'malformed_step', interaction_id: null, detail: 'not UTF-8 JSON' }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, reason: 'malformed_step', interaction_id: null, detail: 'not a JSON object' }
  const v = value as Record<string, unknown>
  const interactionId = typeof v.interaction_id === 'string' ? v.interaction_id : null
  const fail = (reason: 'malformed_step' | 'camel_case_keys' | 'unknown_step', detail: string): Parsed => ({
    ok: false,
    reason,
    interaction_id: interactionId,
    detail,
  })
  const payload = v.payload
  const keys = [...Object.keys(v), ...(payload && typeof payload === 'object' && !Array.isArray(payload) ? Object.keys(payload) : [])]
  const camel = keys.find(k => CAMEL.test(k))
  if (camel) return fail('camel_case_keys', `${camel}: camelCase keys are rejected (use snake_case)`)
  const unknown = Object.keys(v).find(k => !ENVELOPE.has(k))
  if (unknown) return fail('malformed_step', `${unknown}: unknown field`)
  if (v.interaction_version !== 1) return fail('malformed_step', 'interaction_version: must be 1')
  if (v.protocol !== 'x402.payment' || v.protocol_version !== 1) return fail('malformed_step', "protocol: must be 'x402.payment' version 1")
  if (typeof v.step !== 'string') return fail('malformed_step', 'step: must be a string')
  if (!(STEP_KINDS as readonly string[]).includes(v.step)) return fail('unknown_step', `step: ${v.step.slice(0, 40)} is not known`)
  if (!interactionId) return fail('malformed_step', 'interaction_id: required')
  if (typeof v.step_id !== 'string' || !UUID.test(v.step_id)) return fail('malformed_step', 'step_id: must be a uuid')
  if (v.prev_step_id !== null && (typeof v.prev_step_id !== 'string' || !UUID.test(v.prev_step_id)))
    return fail('malformed_step', 'prev_step_id: must be a uuid or null')
  if (v.expires_at !== null && v.expires_at !== undefined && (typeof v.expires_at !== 'string' || Number.isNaN(Date.parse(v.expires_at)))) {
    return fail('malformed_step', 'expires_at: must be a timestamp or null')
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) return fail('malformed_step', 'payload: must be an object')
  return {
    ok: true,
    step: { ...(v as unknown as Step), prev_step_id: (v.prev_step_id as string | null) ?? null, expires_at: (v.expires_at as string | null) ?? null },
  }
}
