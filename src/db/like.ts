/** Patterns for `like` / `ilike` from user text: `%`, `_` and `\` match only themselves. */
export const likeEscape = (text: string) => text.replace(/[\\%_]/g, c => `\\${c}`)

/** Matches values containing `text`. */
export const containsPattern = (text: string) => `%${likeEscape(text)}%`
