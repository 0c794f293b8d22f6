/**
 * Group commit for small statements: calls made while a batch is in flight queue up and
 * go together in the next one, so N concurrent callers cost one round trip (and one WAL
 * flush) instead of N. Under no load a call goes out at once, alone, unless `lingerMs`
 * is set: then it waits that long for company, which suits statements nobody waits on
 * for latency (at a steady few hundred a second, one round trip for several instead of
 * one each).
 */
export class Batcher<I, O> {
  private pending: Array<{ item: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 500,
    private readonly maxInFlight = 2,
    private readonly lingerMs = 0,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight >= this.maxInFlight || this.pending.length === 0) return;
    if (this.lingerMs <= 0 || this.pending.length >= this.maxBatch) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
      }
      queueMicrotask(() => this.pump());
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.pump();
      }, this.lingerMs);
    }
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      this.inFlight++;
      this.run(batch.map((b) => b.item))
        .then(
          (out) => batch.forEach((b, i) => b.resolve(out[i] as O)),
          (err) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.inFlight--;
          this.schedule();
        });
    }
  }
}
