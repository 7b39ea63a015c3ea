/**
 * The limits of functions. The spec fixes the memory cap, the wall clock and the bundle sizes;
 * the CPU budget and wall clock are configuration (FUNCTION_CPU_MS, FUNCTION_WALL_CLOCK_MS);
 * the rest are ours, documented in docs/functions.md and the OpenAPI descriptions.
 */
import type { Config } from '../config'
import type { RunLimits } from './sandbox/protocol'

const MiB = 1024 * 1024

export const MEMORY_BYTES = 128 * MiB
/** QuickJS's own stack limit; much more overflows the host stack of the sandbox thread. */
export const STACK_BYTES = 256 * 1024
export const LOG_BYTES = 256 * 1024
export const SUBREQUESTS = 50
export const RESPONSE_BYTES = 1 * MiB
/** A subrequest (guest fetch) has this long to answer, within the wall clock. */
export const SUBREQUEST_TIMEOUT_MS = 30_000

export const CODE_RAW_BYTES = 64 * MiB
export const CODE_GZIP_BYTES = 10 * MiB
export const SOURCE_MAP_RAW_BYTES = 64 * MiB
export const SOURCE_MAP_GZIP_BYTES = 15 * MiB
/** The request body limit of the deploy routes: a body carrying a bundle and a source map at their raw limits, JSON-encoded. */
export const DEPLOY_BODY_BYTES = CODE_RAW_BYTES + SOURCE_MAP_RAW_BYTES + 4 * MiB

export const SECRETS_PER_SCOPE = 100
export const SECRET_VALUE_BYTES = 4096
export const RESERVED_SECRETS = ['SERVICE_API_KEY', 'SERVICE_WEBHOOK_SECRET', 'SERVICE_API_BASE_URL'] as const
export const SECRET_KEY_PATTERN = /^[A-Z_][A-Z0-9_]*$/

/** The limits of one run; `cpuMs` and `wallMs` come from the configuration. */
export function runLimits(config: Pick<Config, 'FUNCTION_CPU_MS' | 'FUNCTION_WALL_CLOCK_MS'>): RunLimits {
  return {
    memoryBytes: MEMORY_BYTES,
    cpuMs: config.FUNCTION_CPU_MS,
    wallMs: config.FUNCTION_WALL_CLOCK_MS,
    stackBytes: STACK_BYTES,
    logBytes: LOG_BYTES,
    subrequests: SUBREQUESTS,
    responseBytes: RESPONSE_BYTES,
  }
}
