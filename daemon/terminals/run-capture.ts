/**
 * The output of one `terminal/run` between its start and end markers: CR LF → LF, the tail of
 * `maxOutputBytes` in memory, and from the moment it passes that, the whole of it in a spill file
 * (docs/jobs.md) whose path the result names.
 */
import { SpillFile } from '../../spill/spill-file.js';
import { TailBuffer } from '../../spill/tail-buffer.js';
import { decodeUtf8, leadingContinuationBytes } from '../../spill/utf8.js';
import { CrlfStream } from './crlf.js';

/** A run's captured output. */
export class RunCapture {
  private readonly tail: TailBuffer;
  private readonly crlf = new CrlfStream();
  private spill: SpillFile | undefined;
  private total = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly spillPath: string,
    private readonly maxSpillBytes: number,
  ) {
    this.tail = new TailBuffer(maxBytes);
  }

  /** Appends output of the command. */
  push(raw: Buffer): void {
    this.add(this.crlf.push(raw));
  }

  /** Ends the capture; returns the bounded text and the spill file's path when the output was cut. */
  finish(): { text: string; truncated: boolean; bytes: number; spillPath?: string; saveError?: string } {
    this.add(this.crlf.end());
    this.spill?.close();
    const held = this.tail.contents();
    const truncated = this.total > this.maxBytes;
    const text = decodeUtf8(truncated ? held.subarray(leadingContinuationBytes(held)) : held);
    const spillPath = truncated ? this.spill?.livePath : undefined;
    // A spill that could not be written (a full disk) is said, not dropped.
    const saveError = truncated ? this.spill?.failure : undefined;
    return {
      text,
      truncated,
      bytes: this.total,
      ...(spillPath ? { spillPath } : {}),
      ...(saveError === undefined ? {} : { saveError }),
    };
  }

  private add(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (!this.spill && this.total + bytes.length > this.maxBytes) {
      // Everything so far is still in memory: it starts the file.
      this.spill = new SpillFile(this.spillPath, this.maxSpillBytes);
      this.spill.write(this.tail.contents());
    }
    this.spill?.write(bytes);
    this.tail.append(Buffer.from(bytes));
    this.total += bytes.length;
  }
}
