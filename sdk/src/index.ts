/** The typed client of the agent mail service (docs/sdk.md). */
export { AgentMail, DEFAULT_BASE_URL, MAX_WAIT_SECONDS } from './client.ts'
export type { AgentMailOptions, CallOptions, Data, Envelope, Item, ListPath, Meta, Method, Page, PathOf, Paths, Query } from './client.ts'
export { AgentMailError, isAgentMailError } from './errors.ts'
export type { ClientErrorCode, ErrorCode, ServiceErrorCode } from './errors.ts'
export { verifyWebhook, WebhookVerificationError } from './webhooks.ts'
export type { WebhookEvent, WebhookEventName } from './webhooks.ts'
export type { components, operations, paths, webhooks } from './schema.ts'
