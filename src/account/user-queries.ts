/** The users table (account/ owns it): the people who sign in, and every statement on them. */
import { randomUUIDv7 } from 'bun'
import type { Tx } from '../db/client'

/** The user with this email, created when missing (without a password: they sign in later). */
export async function ensureUser(tx: Tx, email: string): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    insert into users (id, email) values (${randomUUIDv7()}, ${email})
    on conflict (lower(email)) do update set email = users.email
    returning id`
  return row!.id
}

/** The user with this email, row-locked for the transaction, and whether they have a password. */
export async function lockUserByEmail(tx: Tx, email: string): Promise<{ id: string; has_password: boolean } | null> {
  const [row] = await tx<{ id: string; has_password: boolean }[]>`
    select id, password_hash is not null as has_password from users where lower(email) = lower(${email}) for update`
  return row ?? null
}

/** Creates a user (with a password hash, or none: they sign in later). */
export async function insertUser(tx: Tx, user: { id: string; email: string; passwordHash?: string }): Promise<void> {
  await tx`insert into users (id, email, password_hash) values (${user.id}, ${user.email}, ${user.passwordHash ?? null})`
}

export async function setPassword(tx: Tx, userId: string, passwordHash: string): Promise<void> {
  await tx`update users set password_hash = ${passwordHash} where id = ${userId}`
}

/** A person who may sign in: their id and password hash (null until they set one). */
export interface Person {
  id: string
  password_hash: string | null
}

export async function findPersonByEmail(sql: Tx, email: string): Promise<Person | null> {
  const [row] = await sql<Person[]>`select id, password_hash from users where lower(email) = lower(${email})`
  return row ?? null
}

export async function userEmail(sql: Tx, userId: string | null): Promise<string | null> {
  const [row] = await sql<{ email: string }[]>`select email from users where id = ${userId}`
  return row?.email ?? null
}
