/**
 * The in-memory window of one stream: the last `capacity` bytes, addressed by whole-stream byte
 * offsets. Pure arithmetic over buffers; no I/O.
 */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private held = 0;
  /** Whole-stream offset of the first byte still held. */
  private startOffset = 0;

  constructor(readonly capacity: number) {}

  /** Total bytes ever appended (whole-stream length). */
  get end(): number {
    return this.startOffset + this.held;
  }

  /** Whole-stream offset of the oldest byte still in memory. */
  get start(): number {
    return this.startOffset;
  }

  /** Appends a chunk and drops the oldest bytes beyond the capacity. */
  append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.held += chunk.length;
    let excess = this.held - this.capacity;
    while (excess > 0) {
      const first = this.chunks[0]!;
      if (first.length <= excess) {
        this.chunks.shift();
        this.held -= first.length;
        this.startOffset += first.length;
        excess -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.held -= excess;
        this.startOffset += excess;
        excess = 0;
      }
    }
  }

  /** Every held byte, in order. */
  contents(): Buffer {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks, this.held)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  /**
   * The bytes from whole-stream offset `from` to the end. `lossy` is true when some bytes between
   * `from` and the window's start were already dropped from memory. Copies only the chunks from
   * `from` on: a reader near the end (a terminal's viewers after every chunk of output, a waiting
   * job reader) costs what it reads, not the whole window.
   */
  sliceFrom(from: number): { bytes: Buffer; offset: number; lossy: boolean } {
    const offset = Math.min(Math.max(from, this.startOffset), this.end);
    const lossy = from < this.startOffset;
    if (offset === this.startOffset) return { bytes: this.contents(), offset, lossy };
    let index = this.chunks.length;
    let chunkStart = this.end;
    while (chunkStart > offset) chunkStart -= this.chunks[--index]!.length;
    const first = this.chunks[index]?.subarray(offset - chunkStart) ?? Buffer.alloc(0);
    const rest = this.chunks.slice(index + 1);
    const bytes = rest.length === 0 ? first : Buffer.concat([first, ...rest], this.end - offset);
    return { bytes, offset, lossy };
  }
}
