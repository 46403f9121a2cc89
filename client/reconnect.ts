/**
 * The reconnecting client's policy (docs/reconnect.md): how long to wait before each re-dial (bounded
 * exponential backoff with jitter), and which calls the library keys so that re-sending them
 * after a drop acts once.
 */
import { randomUUID } from 'node:crypto';
import { KEYED_REQUESTS } from '../protocol/methods.js';

/** How a client re-dials a dropped connection (`connect(url, { reconnect: true })` takes the defaults). */
export interface ReconnectOptions {
  /** Dials tried before the client gives up and fails every waiting call; default 20. */
  maxAttempts?: number;
  /** The wait before the first re-dial; doubled per failed dial; default 100 ms. */
  initialDelayMs?: number;
  /** The longest wait between two dials; default 5000 ms. */
  maxDelayMs?: number;
}

/** The options with their defaults filled in. */
export type ReconnectPolicy = Required<ReconnectOptions>;

/** The defaults: 20 dials over about a minute. */
export const DEFAULT_RECONNECT: ReconnectPolicy = { maxAttempts: 20, initialDelayMs: 100, maxDelayMs: 5_000 };

/** `reconnect` as given to `connect`, as a policy; undefined when the client must not reconnect. */
export function reconnectPolicy(reconnect: boolean | ReconnectOptions | undefined): ReconnectPolicy | undefined {
  if (!reconnect) return undefined;
  const policy = { ...DEFAULT_RECONNECT, ...(reconnect === true ? {} : reconnect) };
  for (const [name, value] of Object.entries(policy)) {
    if (!(Number.isInteger(value) && value > 0)) {
      throw new RangeError(`reconnect.${name} must be a positive integer, got ${String(value)}`);
    }
  }
  return policy;
}

/** The wait before dial `attempt` (0-based): exponential, capped, with up to 25 % jitter so clients spread out. */
export function backoffMs(policy: ReconnectPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (0.75 + random() * 0.25));
}

const KEYED_METHODS = new Set(KEYED_REQUESTS.map((decl) => decl.method));

/** True for a method with a side effect, which takes a `requestKey`. */
export function isKeyedMethod(method: string): boolean {
  return KEYED_METHODS.has(method);
}

/** `params` with a fresh `requestKey` when the method takes one and the caller gave none. */
export function withKey<P>(method: string, params: P): P {
  if (!isKeyedMethod(method) || params === null || typeof params !== 'object') return params;
  if ((params as { requestKey?: unknown }).requestKey !== undefined) return params;
  return { ...params, requestKey: randomUUID() };
}

/** True when `params` carries a request key. */
export function hasKey(params: unknown): boolean {
  return params !== null && typeof params === 'object' && (params as { requestKey?: unknown }).requestKey !== undefined;
}
