/**
 * How many client connections (HTTP and SMTP together) this process may hold open: its
 * open-file limit less a reserve for everything else (database connections, listeners, files,
 * the sandbox). Past it a listener refuses at once (HTTP 503, SMTP 421) and closes, instead of
 * letting accept() fail with EMFILE, which leaves the connection queued and the event loop
 * spinning on a listener that is always ready. The limit is of the OS process, so the budget is
 * one per process, not per context.
 */
import { readFileSync } from 'node:fs'

/** File descriptors kept for what is not a client connection. */
export const RESERVED_FDS = 256

/** The soft limit on open files of this process (Linux: /proc/self/limits); Infinity when unknown. */
export function openFileLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find(l => l.startsWith('Max open files'))
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0]
    return soft && /^\d+$/.test(soft) ? Number(soft) : Infinity
  } catch {
    return Infinity
  }
}

export class ConnectionBudget {
  private open = 0

  constructor(readonly capacity: number) {}

  /** Counts a new connection in; false (and nothing counted) when the budget is spent. */
  take(): boolean {
    if (this.open >= this.capacity) return false
    this.open++
    return true
  }

  release(): void {
    this.open--
  }

  get used(): number {
    return this.open
  }
}

/** This process's budget. */
export const connectionBudget = new ConnectionBudget(Math.max(16, openFileLimit() - RESERVED_FDS))
