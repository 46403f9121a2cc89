/**
 * Denial detection. Inside bubblewrap every path outside the writable places is a read-only bind
 * mount, so a blocked write fails with EROFS, which every tool reports as `Read-only file system`
 * (coreutils, bash redirections, Python's `[Errno 30]`, git, npm…). That is its one signature:
 * `Permission denied` (EACCES) comes from ordinary file permissions, which bubblewrap does not
 * add, so counting it would report denials the sandbox did not cause.
 *
 * Landlock refuses with EACCES, `Permission denied`: under it that is the signature, and a
 * command that hits an ordinary permission error is reported as denied too (the text cannot tell
 * the two apart; docs/sandbox-backends.md says so). A read-only mount still says EROFS.
 */

/** The text a blocked write leaves on stderr under bubblewrap. */
export const BWRAP_SIGNATURES: readonly string[] = ['Read-only file system'];

/** The text a blocked access leaves on stderr under Landlock. */
export const LANDLOCK_SIGNATURES: readonly string[] = ['Permission denied', 'Read-only file system'];

/** The signatures of bubblewrap, the first runner (kept for callers that name no runner). */
export const DENIAL_SIGNATURES = BWRAP_SIGNATURES;

/** True when `text` carries one of `signatures`. */
export function hasDenialSignature(text: string, signatures: readonly string[] = DENIAL_SIGNATURES): boolean {
  return signatures.some((signature) => text.includes(signature));
}

/**
 * Watches a stream chunk by chunk, whatever its size, for a denial signature, also when a chunk
 * boundary cuts the signature in two. Keeps at most one signature's length of carry-over.
 */
export class DenialScanner {
  private carry = Buffer.alloc(0);
  private found = false;
  private readonly longest: number;

  /** Scans for `signatures` (default bubblewrap's). */
  constructor(private readonly signatures: readonly string[] = DENIAL_SIGNATURES) {
    this.longest = Math.max(...signatures.map((s) => Buffer.byteLength(s)));
  }

  /** True once a signature was seen. */
  get denied(): boolean {
    return this.found;
  }

  /** Takes the next chunk of the stream. */
  write(chunk: Buffer): void {
    if (this.found) return;
    const window = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    // Signatures are ASCII, so a byte search cannot be fooled by a multi-byte character.
    this.found = this.signatures.some((signature) => window.includes(signature));
    this.carry = Buffer.from(window.subarray(Math.max(0, window.length - (this.longest - 1))));
  }
}
