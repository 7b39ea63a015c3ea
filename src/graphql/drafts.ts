/** Drafts (GET /v1/drafts): the node type of the `drafts` and `draft` fields (declared in src/drafts/operations.ts). */
import { connectionTypes } from './connection'
import type { SchemaModule } from './module'

export const draftsModule: SchemaModule = {
  sdl: `
"A message kept to send later, or held for approval (GET /v1/drafts/{id})."
type Draft {
  id: ID!
  "draft, pending_approval, sending, sent or rejected"
  status: String!
  from: String!
  fromName: String
  to: [String!]!
  cc: [String!]!
  bcc: [String!]!
  replyTo: [String!]!
  subject: String
  bodyText: String
  bodyHtml: String
  "the stored template it is rendered from, as given"
  template: JSON
  "filename, content_type and size_bytes of each file"
  attachments: JSON!
  headers: JSON!
  inReplyToEmailId: ID
  scheduledAt: DateTime
  repeat: JSON
  "the send it became (sentEmail)"
  sendId: ID
  sendError: SendError
  "via (api or link) and user_id of who approved or rejected it"
  decidedBy: JSON
  decidedAt: DateTime
  rejectionReason: String
  createdAt: DateTime!
  updatedAt: DateTime!
}

${connectionTypes('Draft', 'drafts')}
`,
  resolvers: {},
}
