/**
 * Bounded capture of one output stream (docs/jobs.md): memory keeps the tail; past `maxBytes` the
 * complete stream from byte 0 goes to a spill file; past `maxSpillBytes` the file is deleted.
 */
import { StringDecoder } from 'node:string_decoder';
import type { CollectedOutput } from '../protocol/types.js';
import { SpillFile } from './spill-file.js';
import { TailBuffer } from './tail-buffer.js';
import { decodeUtf8, leadingContinuationBytes } from './utf8.js';

/** How one stream is captured. */
export interface CollectorOptions {
  /** Bytes kept in memory (the tail). */
  maxBytes: number;
  /** Cap of the spill file. */
  maxSpillBytes: number;
  /** Where the spill file goes if the stream outgrows memory. */
  spillPath: string;
  /** Write the file from the first byte on, whatever the size (background job logs). */
  alwaysToFile?: boolean;
  /** Receives decoded text as it arrives (streaming); characters are never split. */
  onText?: (text: string) => void;
  /** Receives every chunk's exact bytes as it arrives (streaming without decoding). */
  onBytes?: (chunk: Buffer) => void;
}

/** Captures one stream; feed it with `write`, then `finish`. */
export class OutputCollector {
  readonly tail: TailBuffer;
  private file: SpillFile | undefined;
  private readonly decoder: StringDecoder | undefined;

  constructor(private readonly options: CollectorOptions) {
    this.tail = new TailBuffer(options.maxBytes);
    if (options.alwaysToFile) this.file = new SpillFile(options.spillPath, options.maxSpillBytes);
    if (options.onText) this.decoder = new StringDecoder('utf8');
  }

  /** Whole-stream bytes seen so far. */
  get totalBytes(): number {
    return this.tail.end;
  }

  /** The file holding the complete stream, while it exists and is complete. */
  get spillPath(): string | undefined {
    return this.file?.livePath;
  }

  /** Takes the next chunk of the stream. */
  write(chunk: Buffer): void {
    if (!this.file && this.tail.end + chunk.length > this.options.maxBytes) {
      // First overflow: memory still holds every earlier byte, so the file starts at byte 0.
      this.file = new SpillFile(this.options.spillPath, this.options.maxSpillBytes);
      this.file.write(this.tail.contents());
    }
    this.file?.write(chunk);
    this.tail.append(chunk);
    this.options.onBytes?.(chunk);
    if (this.decoder) {
      const text = this.decoder.write(chunk);
      if (text.length > 0) this.options.onText!(text);
    }
  }

  /** Ends the stream: flushes streaming text, closes the file, and reports the capture. */
  finish(): CollectedOutput {
    if (this.decoder) {
      const rest = this.decoder.end();
      if (rest.length > 0) this.options.onText!(rest);
    }
    this.file?.close();
    return this.result();
  }

  /** Why the spill file could not be written, if it could not: `output could not be saved: …`. */
  get saveError(): string | undefined {
    const failure = this.file?.failure;
    return failure === undefined ? undefined : `output could not be saved: ${failure}`;
  }

  /** The capture so far: the tail decoded, starting on a character boundary when cut. */
  result(): CollectedOutput {
    const bytes = this.tail.contents();
    const truncated = this.tail.start > 0;
    const text = decodeUtf8(truncated ? bytes.subarray(leadingContinuationBytes(bytes)) : bytes);
    const spillPath = this.spillPath;
    const output: CollectedOutput = spillPath === undefined ? { text, truncated } : { text, truncated, spillPath };
    const { saveError } = this;
    if (saveError !== undefined) output.saveError = saveError;
    return output;
  }

  /** Deletes the file, if any (the run was not worth keeping, or its owner went away). */
  discard(): void {
    this.file?.discard();
  }
}
