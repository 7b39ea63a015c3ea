/** Checking a person's password on the authorization page (argon2id hashes in users.password_hash). */
import { findPersonByEmail } from '../account/user-queries'
import type { Tx } from '../db/client'

export const MAX_PASSWORD_LENGTH = 1024

let decoy: Promise<string> | undefined

/**
 * The person whose email and password these are, or null. Unknown addresses and people without
 * a password cost one verification too, so timing does not tell which addresses exist.
 */
export async function verifyPassword(sql: Tx, email: string, password: string): Promise<string | null> {
  if (email.length > 320 || password.length > MAX_PASSWORD_LENGTH) return null
  const person = await findPersonByEmail(sql, email.trim())
  const hash = person?.password_hash ?? (await (decoy ??= Bun.password.hash('decoy password, never valid', 'argon2id')))
  const ok = await Bun.password.verify(password, hash).catch(() => false)
  return ok && person?.password_hash ? person.id : null
}

/** The stored form of a new password. */
export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, 'argon2id')
}
