/**
 * Coalesces concurrent calls into one database statement: calls made while a batch is being
 * collected (one macrotask turn, up to `maxSize`) run together, each getting its own result.
 * Fewer round trips and one transaction (one WAL flush) for many deliveries. If the batch
 * statement fails, each call is retried on its own, so one bad row never fails its
 * neighbours and a serialisation failure (deadlock) degrades to single calls.
 */
export class Batcher<I, O> {
  private queue: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private scheduled = false;

  constructor(
    private readonly many: (items: I[]) => Promise<O[]>,
    private readonly one: (item: I) => Promise<O>,
    private readonly maxSize = 64,
  ) {}

  run(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.queue.length >= this.maxSize) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (batch.length === 1) {
      const [b] = batch as [(typeof batch)[number]];
      this.one(b.item).then(b.resolve, b.reject);
      return;
    }
    this.many(batch.map((b) => b.item)).then(
      (outs) => batch.forEach((b, i) => b.resolve(outs[i] as O)),
      () => {
        for (const b of batch) this.one(b.item).then(b.resolve, b.reject);
      },
    );
  }
}
