/**
 * Coalesces concurrent calls into batches: calls made while `maxInFlight` batches are
 * running wait and leave together in the next one. Under light load a call goes alone
 * (one round trip); under heavy load one statement and one commit serve many callers,
 * which is what lets a 2-core box keep up (each commit costs a WAL flush and CPU).
 */
export class MicroBatcher<T, R> {
  private queue: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    private readonly maxBatch = 256,
    private readonly maxInFlight = 4,
  ) {}

  push(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Let the calls of this turn of the event loop join the batch.
        setImmediate(() => {
          this.scheduled = false;
          this.drain();
        });
      }
    });
  }

  private drain(): void {
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      this.run(batch.map((b) => b.item))
        .then(
          (results) => batch.forEach((b, i) => b.resolve(results[i] as R)),
          (err: unknown) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.inFlight--;
          this.drain();
        });
    }
  }
}
