/**
 * Denial detection. Inside the sandbox every path outside the writable places is a read-only bind
 * mount, so a blocked write fails with EROFS, which every tool reports as `Read-only file system`
 * (coreutils, bash redirections, Python's `[Errno 30]`, git, npm…). That is the one signature:
 * `Permission denied` (EACCES) comes from ordinary file permissions, which the sandbox does not
 * add, so counting it would report denials the sandbox did not cause.
 */

/** The text a blocked write leaves on stderr. */
export const DENIAL_SIGNATURES: readonly string[] = ['Read-only file system'];

const LONGEST = Math.max(...DENIAL_SIGNATURES.map((s) => Buffer.byteLength(s)));

/** True when `text` carries a denial signature. */
export function hasDenialSignature(text: string): boolean {
  return DENIAL_SIGNATURES.some((signature) => text.includes(signature));
}

/**
 * Watches a stream chunk by chunk, whatever its size, for a denial signature, also when a chunk
 * boundary cuts the signature in two. Keeps at most one signature's length of carry-over.
 */
export class DenialScanner {
  private carry = Buffer.alloc(0);
  private found = false;

  /** True once a signature was seen. */
  get denied(): boolean {
    return this.found;
  }

  /** Takes the next chunk of the stream. */
  write(chunk: Buffer): void {
    if (this.found) return;
    const window = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    // Signatures are ASCII, so a byte search cannot be fooled by a multi-byte character.
    this.found = DENIAL_SIGNATURES.some((signature) => window.includes(signature));
    this.carry = Buffer.from(window.subarray(Math.max(0, window.length - (LONGEST - 1))));
  }
}
