/**
 * Runs once per `bun test`. The run's database is made on first use (`testDatabase()`), so
 * tests that need none (`make test-unit`: the *.unit.test.ts files) run without PostgreSQL, in seconds; it is dropped at the end.
 */
import { afterAll } from 'bun:test'
import { setLogLevel } from '../../src/log'
import { dropTestDatabase } from './database'

setLogLevel((process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent')

afterAll(dropTestDatabase)
