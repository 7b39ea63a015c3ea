/** Runs once per `bun test`: one fresh database for the whole run, dropped at the end. */
import { afterAll } from 'bun:test'
import { setLogLevel } from '../../src/log'
import { createTestDatabase, type TestDatabase } from './database'

setLogLevel((process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent')

declare global {
  var testDatabase: Promise<TestDatabase> | undefined
}

globalThis.testDatabase ??= createTestDatabase()

afterAll(async () => {
  const db = await globalThis.testDatabase
  globalThis.testDatabase = undefined
  await db?.drop()
})
