/**
 * The request keys each session remembers (docs/reconnect.md), with the answer each got: in flight (a
 * promise) or settled. Bounded per session in count (`maxRequestKeysPerSession`) and in answer
 * bytes (`maxRequestKeyBytesPerSession`), across sessions in answer bytes (`maxRequestKeyBytes`),
 * and in age (`requestKeyRetentionMs` after the answer). Keys still in flight are never forgotten,
 * so a session with that many requests in flight gets LIMIT_EXCEEDED for one more.
 *
 * Past the count bound or the age the oldest answered keys are forgotten: a repeat acts again.
 * Past a byte bound only the oldest answers are dropped (the session's own oldest for
 * `maxRequestKeyBytesPerSession`, the daemon's oldest whatever their session for
 * `maxRequestKeyBytes`) and the key is kept with its fingerprint: a repeat with the same params
 * answers `LIMIT_EXCEEDED` saying the request acted once and its answer was dropped, and acts
 * no more; with other params it is INVALID_PARAMS as ever. The newest answer is kept even when
 * it alone passes a bound: its retry is the likely one.
 */
import { ExecdError } from '../../protocol/errors.js';

/** One remembered key. */
export interface KeyEntry {
  method: string;
  fingerprint: string;
  /** The first request's answer (a result or an `ExecdError` value). */
  answer: Promise<unknown>;
  /** When the answer was known (ms since the epoch); undefined while in flight. */
  settledAt?: number;
  /** Size of the answer's JSON, counted once settled. */
  bytes: number;
  /** Called when the key is sent again while the first request is in flight. */
  onRepeat?: (params: Record<string, unknown>, ctx: unknown) => void;
  /** Set once the answer was dropped for bytes: `answer` is then the error a repeat gets. */
  dropped?: boolean;
}

/** The bounds, read from the configuration at each use. */
export interface KeyLimits {
  requestKeyRetentionMs: number;
  maxRequestKeysPerSession: number;
  maxRequestKeyBytesPerSession: number;
  maxRequestKeyBytes: number;
}

interface SessionKeys {
  entries: Map<string, KeyEntry>;
  bytes: number;
}

/** Size of an answer as the client reads it. */
export function answerBytes(answer: unknown): number {
  if (answer instanceof ExecdError) return Buffer.byteLength(answer.message) + 64;
  const json: unknown = JSON.stringify(answer);
  return typeof json === 'string' ? Buffer.byteLength(json) : 0;
}

/** What a repeat of a key whose answer was dropped to keep within `bound` (`limit` bytes) answers. */
export function droppedAnswer(bound: string, limit: number): ExecdError {
  return new ExecdError(
    'LIMIT_EXCEEDED',
    `requestKey: this request acted once; its answer was dropped to keep remembered answers within ${bound} (${limit} bytes), and it is not acted on again`,
  );
}

/** Every session's request keys. */
export class RequestKeyStore {
  private readonly sessions = new Map<string, SessionKeys>();
  /** Answered entries still holding their answer, oldest answer first, across sessions. */
  private readonly answered = new Map<KeyEntry, SessionKeys>();
  /** Bytes of every answer held. */
  private totalBytes = 0;

  constructor(private readonly limits: () => KeyLimits) {}

  /** The entry of `key` in `sessionId`, if it is still remembered. */
  lookup(sessionId: string, key: string, now = Date.now()): KeyEntry | undefined {
    const keys = this.sessions.get(sessionId);
    if (!keys) return undefined;
    this.expire(keys, now);
    return keys.entries.get(key);
  }

  /**
   * Remembers `key` for a request now in flight; its answer is counted once it settles.
   * LIMIT_EXCEEDED when the session already has `maxRequestKeysPerSession` keys in flight.
   */
  add(sessionId: string, key: string, entry: KeyEntry, now = Date.now()): ExecdError | undefined {
    let keys = this.sessions.get(sessionId);
    if (!keys) this.sessions.set(sessionId, (keys = { entries: new Map(), bytes: 0 }));
    this.expire(keys, now);
    const { maxRequestKeysPerSession } = this.limits();
    this.evictSettled(keys, () => keys.entries.size >= maxRequestKeysPerSession);
    if (keys.entries.size >= maxRequestKeysPerSession) {
      return new ExecdError(
        'LIMIT_EXCEEDED',
        `maxRequestKeysPerSession limit reached (${maxRequestKeysPerSession}): that many keyed requests are in flight`,
      );
    }
    keys.entries.set(key, entry);
    entry.answer.then(
      (answer) => this.settle(sessionId, key, entry, answerBytes(answer)),
      () => this.settle(sessionId, key, entry, 0),
    );
    return undefined;
  }

  /**
   * Remembers a key a previous daemon answered (from the job journal), as settled at `settledAt`;
   * ignored when already past the retention, or when the session holds the key already.
   */
  restore(sessionId: string, key: string, entry: KeyEntry & { settledAt: number }, now = Date.now()): void {
    if (now - entry.settledAt >= this.limits().requestKeyRetentionMs) return;
    let keys = this.sessions.get(sessionId);
    if (!keys) this.sessions.set(sessionId, (keys = { entries: new Map(), bytes: 0 }));
    if (keys.entries.has(key)) return;
    keys.entries.set(key, entry);
    this.hold(keys, entry, entry.bytes);
    const { maxRequestKeysPerSession } = this.limits();
    this.evictSettled(keys, () => keys.entries.size > maxRequestKeysPerSession);
    this.dropForBytes(keys);
  }

  /** Forgets every key of a closed session. */
  forgetSession(sessionId: string): void {
    const keys = this.sessions.get(sessionId);
    if (!keys) return;
    this.sessions.delete(sessionId);
    for (const entry of keys.entries.values()) this.release(keys, entry);
  }

  /** Keys remembered across sessions, and the bytes of their answers (for `daemon/status` and tests). */
  get usage(): { keys: number; bytes: number } {
    let keys = 0;
    for (const session of this.sessions.values()) keys += session.entries.size;
    return { keys, bytes: this.totalBytes };
  }

  private settle(sessionId: string, key: string, entry: KeyEntry, bytes: number): void {
    entry.settledAt = Date.now();
    entry.onRepeat = undefined;
    const keys = this.sessions.get(sessionId);
    // The session was closed meanwhile, or the entry forgotten: nothing to count.
    if (keys?.entries.get(key) !== entry) return;
    this.hold(keys, entry, bytes);
    // The newest answer is kept even when it alone passes a bound: its retry is the likely one.
    this.dropForBytes(keys, entry);
  }

  /** Counts the answer of a settled `entry` of `keys`, as the newest answer held. */
  private hold(keys: SessionKeys, entry: KeyEntry, bytes: number): void {
    entry.bytes = bytes;
    keys.bytes += bytes;
    this.totalBytes += bytes;
    this.answered.set(entry, keys);
  }

  /**
   * Drops the oldest answers (never `keep`'s) while the session's pass `maxRequestKeyBytesPerSession`,
   * then while the daemon's pass `maxRequestKeyBytes`.
   */
  private dropForBytes(keys: SessionKeys, keep?: KeyEntry): void {
    const { maxRequestKeyBytesPerSession, maxRequestKeyBytes } = this.limits();
    for (const entry of keys.entries.values()) {
      if (keys.bytes <= maxRequestKeyBytesPerSession) break;
      if (entry.settledAt === undefined || entry.dropped || entry === keep) continue;
      this.drop(keys, entry, droppedAnswer('maxRequestKeyBytesPerSession', maxRequestKeyBytesPerSession));
    }
    for (const [entry, owner] of this.answered) {
      if (this.totalBytes <= maxRequestKeyBytes) break;
      if (entry === keep) continue;
      this.drop(owner, entry, droppedAnswer('maxRequestKeyBytes', maxRequestKeyBytes));
    }
  }

  /** Lets go of an entry's answer; the key stays, and a repeat of it gets `error`. */
  private drop(keys: SessionKeys, entry: KeyEntry, error: ExecdError): void {
    this.release(keys, entry);
    entry.dropped = true;
    entry.answer = Promise.resolve(error);
  }

  /** Uncounts the answer an entry holds. */
  private release(keys: SessionKeys, entry: KeyEntry): void {
    if (!this.answered.delete(entry)) return;
    keys.bytes -= entry.bytes;
    this.totalBytes -= entry.bytes;
    entry.bytes = 0;
  }

  /** Forgets the oldest settled entries while `over()` holds. */
  private evictSettled(keys: SessionKeys, over: () => boolean): void {
    for (const [key, entry] of keys.entries) {
      if (!over()) return;
      if (entry.settledAt === undefined) continue;
      keys.entries.delete(key);
      this.release(keys, entry);
    }
  }

  private expire(keys: SessionKeys, now: number): void {
    const { requestKeyRetentionMs } = this.limits();
    for (const [key, entry] of keys.entries) {
      if (entry.settledAt === undefined || now - entry.settledAt < requestKeyRetentionMs) continue;
      keys.entries.delete(key);
      this.release(keys, entry);
    }
  }
}
