/** The messages between the pool (main thread) and its sandbox threads, and what a run returns. */

export const OUTCOMES = ['ok', 'exception', 'exceeded_cpu', 'exceeded_memory', 'exceeded_wall_clock', 'exceeded_limit', 'crashed'] as const
export type Outcome = (typeof OUTCOMES)[number]

export interface RunLimits {
  memoryBytes: number
  cpuMs: number
  wallMs: number
  stackBytes: number
  logBytes: number
  subrequests: number
  responseBytes: number
}

/** The request a function receives: its body in base64. */
export interface GuestRequest {
  method: string
  url: string
  headers: [string, string][]
  body: string | null
}

export interface RunRequest {
  /** `check`: evaluate the module and check its default export (deploy); `invoke`: call fetch */
  kind: 'check' | 'invoke'
  code: string
  /** an invocation may reuse a warm sandbox that ran this key (the deployment id) before */
  warmKey?: string
  request?: GuestRequest
  env?: Record<string, string>
  limits: RunLimits
}

export interface LogLine {
  level: string
  message: string
  at: string
}

export interface RunResult {
  outcome: Outcome
  cpuMs: number
  wallMs: number
  logs: LogLine[]
  logsTruncated: boolean
  subrequests: number
  response: { status: number; headers: [string, string][]; body: string } | null
  error: { name: string; message: string; stack: string | null; line: number | null; column: number | null } | null
}

/** A guest fetch as the host answers it: an error, or the response with its body in base64. */
export type FetchAnswer =
  | { error: string }
  | { error?: undefined; status: number; statusText: string; headers: [string, string][]; body: string | null; url: string; redirected: boolean }

export interface GuestFetch {
  url: string
  method: string
  headers: [string, string][]
  body: string | null
  redirect: string
}

export type ToThread = { type: 'run'; runId: number; request: RunRequest } | { type: 'answer'; runId: number; callId: number; value: FetchAnswer }

export type FromThread =
  | { type: 'done'; runId: number; result: RunResult }
  | { type: 'fetch'; runId: number; callId: number; arg: GuestFetch }
  | { type: 'ready' }
