/**
 * The per-sender storage bound as the PostgreSQL store applies it (supplement §5.2's
 * "bounded dedup storage"): a cached count per sender, read from the maintained counter
 * (an O(1) lookup, never a count of the table), re-read at most every `refreshMs` in the
 * background once known and bumped locally between reads. Concurrent first sights of a
 * sender share one read. Approximate across processes by design: it protects storage.
 */
interface SenderCount {
  count: number;
  readAt: number;
  refreshing: boolean;
}

export class SenderBound {
  private readonly counts = new Map<string, SenderCount>();
  private readonly firstReads = new Map<string, Promise<number>>();

  constructor(
    private readonly max: number,
    private readonly refreshMs: number,
    private readonly read: (sender: string) => Promise<number>,
  ) {}

  /** Whether new keys of this sender are refused (keys already stored still answer). */
  async atBound(sender: string): Promise<boolean> {
    let c = this.counts.get(sender);
    const now = Date.now();
    if (!c) {
      let first = this.firstReads.get(sender);
      if (!first) {
        first = this.read(sender).finally(() => this.firstReads.delete(sender));
        this.firstReads.set(sender, first);
      }
      const count = await first;
      c = this.counts.get(sender) ?? { count, readAt: now, refreshing: false };
      this.counts.set(sender, c);
    } else if (now - c.readAt > this.refreshMs && !c.refreshing) {
      this.refresh(sender, c);
    }
    return c.count >= this.max;
  }

  /** A key of this sender was stored. */
  bump(sender: string): void {
    const c = this.counts.get(sender);
    if (c) c.count++;
  }

  /** Keys were purged: read every count again at next sight. */
  forget(): void {
    this.counts.clear();
  }

  private refresh(sender: string, entry: SenderCount): void {
    entry.refreshing = true;
    this.read(sender)
      .then((n) => {
        entry.count = n;
        entry.readAt = Date.now();
      })
      .catch(() => {})
      .finally(() => {
        entry.refreshing = false;
      });
  }
}
