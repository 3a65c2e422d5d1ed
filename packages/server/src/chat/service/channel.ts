/** An unbounded queue read by at most one consumer; the writer never waits for the reader. */
export class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiting: (() => void) | undefined;
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
    const resolve = this.waiting;
    this.waiting = undefined;
    resolve?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let index = 0;
    while (true) {
      if (index < this.items.length) {
        yield this.items[index++]!;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
    }
  }
}
