/**
 * An unbounded queue: the writer never waits for a reader. Every reader gets every item from where it
 * starts (the turn's own reader from the first; a resume in this process from its cursor).
 */
export class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiting: Array<() => void> = [];
  private closed = false;
  private readonly observe: ((item: T) => void) | undefined;

  /** `observe` sees each item as it is pushed (the stream buffer records the lines). */
  constructor(observe?: (item: T) => void) {
    this.observe = observe;
  }

  push(item: T): void {
    if (this.closed) return;
    this.observe?.(item);
    this.items.push(item);
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  private wake() {
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.from(0);
  }

  /** The items from index `start` on, then each as it is pushed, until the channel is closed. */
  async *from(start: number): AsyncGenerator<T> {
    let index = start;
    while (true) {
      if (index < this.items.length) {
        yield this.items[index++]!;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
      });
    }
  }
}
