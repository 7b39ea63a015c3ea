/** What the changes feed's routes accept, kept apart from them so that a process without the API (roles.ts) can read it. */

/** The longest `wait` of `GET /v1/changes`, in seconds. */
export const MAX_CHANGES_WAIT_SECONDS = 30
