/** The typed client of the agent mail service (docs/sdk.md). */
export { AgentMail, DEFAULT_BASE_URL, MAX_WAIT_SECONDS } from './client'
export type { AgentMailOptions, CallOptions, Data, Envelope, Item, ListPath, Meta, Method, Page, PathOf, Paths, Query } from './client'
export { AgentMailError, isAgentMailError } from './errors'
export type { ClientErrorCode, ErrorCode, ServiceErrorCode } from './errors'
export { verifyWebhook, WebhookVerificationError } from './webhooks'
export type { WebhookEvent, WebhookEventName } from './webhooks'
export type { components, operations, paths, webhooks } from './schema'
