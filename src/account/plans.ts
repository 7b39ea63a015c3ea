/**
 * Plans, their limits and the entitlements they include. An organization's entitlements are
 * its plan's plus any granted by an operator (`admin org entitle`).
 */
export const PLANS = ['free', 'agent', 'developer', 'power', 'platinum'] as const
export type Plan = (typeof PLANS)[number]

export const ENTITLEMENTS = [
  'webhooks_per_domain',
  'filters_per_domain',
  'routes_per_domain',
  'spam_thresholds_per_domain',
  'x402_payments',
  'interactions_enabled',
  'functions_managed_build',
  'payloads',
] as const
export type Entitlement = (typeof ENTITLEMENTS)[number]

/** Limits every plan shares, shown with the plan's own in GET /v1/account (memories/, wake/ enforce them). */
export const MEMORY_VALUE_MAX_BYTES = 256 * 1024
/** Shortest interval between two runs of a repeating wake (cron or every_minutes). */
export const WAKE_MIN_INTERVAL_MINUTES = 1

export interface PlanLimits {
  storage_mb: number
  /** storage at which inbound mail is refused; null = never refused (overage is billed) */
  storage_limit_mb: number | null
  send_per_hour: number
  send_per_day: number
  api_per_minute: number
  webhooks_max_global: number | null
  /** memories: keys, and bytes of values and metadata, per organization (both scopes together) */
  memory_keys_max: number
  memory_storage_mb: number
  /** wake schedules enabled at once */
  wakes_active_max: number
}

interface PlanDefinition {
  limits: PlanLimits
  entitlements: readonly Entitlement[]
  /** the reply-only agent tier: first sends only to people who wrote first */
  replyOnly: boolean
}

const send = { send_per_hour: 1000, send_per_day: 10000 }
/** the agent-state allowances of the free and agent tiers */
const small = { memory_keys_max: 1_000, memory_storage_mb: 10, wakes_active_max: 10 }
const paidRouting = ['webhooks_per_domain', 'filters_per_domain', 'routes_per_domain', 'spam_thresholds_per_domain'] as const

const DEFINITIONS: Record<Plan, PlanDefinition> = {
  free: {
    limits: { storage_mb: 100, storage_limit_mb: 100, ...send, api_per_minute: 120, webhooks_max_global: 1, ...small },
    entitlements: [],
    replyOnly: false,
  },
  agent: {
    limits: { storage_mb: 100, storage_limit_mb: 100, ...send, api_per_minute: 120, webhooks_max_global: 1, ...small },
    entitlements: [],
    replyOnly: true,
  },
  developer: {
    limits: {
      storage_mb: 5_120,
      storage_limit_mb: null,
      ...send,
      api_per_minute: 3000,
      webhooks_max_global: null,
      memory_keys_max: 100_000,
      memory_storage_mb: 1_024,
      wakes_active_max: 100,
    },
    entitlements: [...paidRouting, 'payloads'],
    replyOnly: false,
  },
  power: {
    limits: {
      storage_mb: 10_240,
      storage_limit_mb: null,
      ...send,
      api_per_minute: 3000,
      webhooks_max_global: null,
      memory_keys_max: 500_000,
      memory_storage_mb: 5_120,
      wakes_active_max: 500,
    },
    entitlements: [...paidRouting, 'payloads', 'x402_payments', 'interactions_enabled'],
    replyOnly: false,
  },
  platinum: {
    limits: {
      storage_mb: 51_200,
      storage_limit_mb: null,
      ...send,
      api_per_minute: 3000,
      webhooks_max_global: null,
      memory_keys_max: 2_000_000,
      memory_storage_mb: 20_480,
      wakes_active_max: 2_000,
    },
    entitlements: [...paidRouting, 'payloads', 'x402_payments', 'interactions_enabled', 'functions_managed_build'],
    replyOnly: false,
  },
}

export function planDefinition(plan: Plan): PlanDefinition {
  return DEFINITIONS[plan]
}

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value)
}

export function isEntitlement(value: string): value is Entitlement {
  return (ENTITLEMENTS as readonly string[]).includes(value)
}

/** The plan's entitlements plus the extra ones, deduplicated, in a stable order. */
export function entitlementsOf(plan: Plan, extra: readonly string[]): Entitlement[] {
  const all = new Set<string>([...DEFINITIONS[plan].entitlements, ...extra])
  return ENTITLEMENTS.filter(e => all.has(e))
}
