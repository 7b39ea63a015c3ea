/**
 * Group commit: callers submit one item each and each gets its own result, but the items that
 * arrive while a batch is being written go together into the next one. N concurrent writers
 * then pay for about one transaction (BEGIN, their statements pipelined on one connection, one
 * COMMIT and one WAL flush) instead of N. Nothing waits on a timer: a lone item is written at
 * once, and batches grow only as fast as items arrive during a write.
 *
 * One batch is written at a time, so the batches of a process never wait on each other's row
 * locks. A batch that fails is written again item by item, the items' transactions at once: an
 * item that cannot be written fails alone instead of taking the others down with it.
 */
interface Pending<I, O> {
  item: I
  resolve(result: O): void
  reject(error: unknown): void
}

export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = []
  private writing = false

  /** `write` stores the items in one transaction and returns their results in the same order. */
  constructor(
    private readonly write: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 64,
  ) {}

  /** Items waiting for the next batch. */
  get pending(): number {
    return this.queue.length
  }

  /** Resolves with the item's result once the transaction that wrote it has committed. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      if (!this.writing) void this.drain()
    })
  }

  private async drain(): Promise<void> {
    this.writing = true
    while (this.queue.length) await this.writeBatch(this.queue.splice(0, this.maxBatch))
    this.writing = false
  }

  private async writeBatch(batch: Pending<I, O>[]): Promise<void> {
    try {
      const results = await this.write(batch.map(p => p.item))
      for (const [i, p] of batch.entries()) p.resolve(results[i]!)
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error)
      // At once rather than one after another: items that wait on something (a lock) wait together.
      await Promise.all(batch.map(p => this.write([p.item]).then(([result]) => p.resolve(result!), p.reject)))
    }
  }
}
