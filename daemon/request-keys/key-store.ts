/**
 * The request keys each session remembers (docs/reconnect.md), with the answer each got: in flight (a
 * promise) or settled. Bounded per session in count (`maxRequestKeysPerSession`) and in answer
 * bytes (`maxRequestKeyBytesPerSession`), and in age (`requestKeyRetentionMs` after the answer).
 * Past a bound the oldest answered keys are forgotten first; keys still in flight are never
 * forgotten, so a session with that many requests in flight gets LIMIT_EXCEEDED for one more.
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
}

/** The bounds, read from the configuration at each use. */
export interface KeyLimits {
  requestKeyRetentionMs: number;
  maxRequestKeysPerSession: number;
  maxRequestKeyBytesPerSession: number;
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

/** Every session's request keys. */
export class RequestKeyStore {
  private readonly sessions = new Map<string, SessionKeys>();

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
    keys.bytes += entry.bytes;
    const { maxRequestKeysPerSession, maxRequestKeyBytesPerSession } = this.limits();
    this.evictSettled(
      keys,
      () => keys.entries.size > maxRequestKeysPerSession || keys.bytes > maxRequestKeyBytesPerSession,
    );
  }

  /** Forgets every key of a closed session. */
  forgetSession(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** Keys remembered across sessions, and the bytes of their answers (for `daemon/status` and tests). */
  get usage(): { keys: number; bytes: number } {
    let keys = 0;
    let bytes = 0;
    for (const session of this.sessions.values()) {
      keys += session.entries.size;
      bytes += session.bytes;
    }
    return { keys, bytes };
  }

  private settle(sessionId: string, key: string, entry: KeyEntry, bytes: number): void {
    entry.settledAt = Date.now();
    entry.onRepeat = undefined;
    const keys = this.sessions.get(sessionId);
    // The session was closed meanwhile, or the entry forgotten: nothing to count.
    if (keys?.entries.get(key) !== entry) return;
    entry.bytes = bytes;
    keys.bytes += bytes;
    const { maxRequestKeyBytesPerSession } = this.limits();
    // The newest answer is kept even when it alone passes the bound: its retry is the likely one.
    this.evictSettled(keys, () => keys.bytes > maxRequestKeyBytesPerSession, entry);
  }

  /** Forgets the oldest settled entries (but `keep`) while `over()` holds. */
  private evictSettled(keys: SessionKeys, over: () => boolean, keep?: KeyEntry): void {
    for (const [key, entry] of keys.entries) {
      if (!over()) return;
      if (entry.settledAt === undefined || entry === keep) continue;
      keys.entries.delete(key);
      keys.bytes -= entry.bytes;
    }
  }

  private expire(keys: SessionKeys, now: number): void {
    const { requestKeyRetentionMs } = this.limits();
    for (const [key, entry] of keys.entries) {
      if (entry.settledAt === undefined || now - entry.settledAt < requestKeyRetentionMs) continue;
      keys.entries.delete(key);
      keys.bytes -= entry.bytes;
    }
  }
}
