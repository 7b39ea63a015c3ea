/**
 * JSON Merge Patch (RFC 7386), section 2's MergePatch function as written there: an object
 * patch merges member by member, `null` removes a member, anything else replaces the target.
 */
type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

const isObject = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v)

export function mergePatch(target: unknown, patch: unknown): Json {
  if (!isObject(patch)) return patch as Json
  // A prototype-less copy: a member named "__proto__" stays a member, never a prototype.
  const result: Record<string, Json> = Object.assign(Object.create(null), isObject(target) ? target : {})
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name]
    else result[name] = mergePatch(result[name], value)
  }
  return result
}
