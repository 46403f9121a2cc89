/**
 * What makes two requests "the same request" for a request key: the method and every param but
 * the key itself and `outputToken` (a streaming token names the connection's subscription, not
 * the effect, and a client re-sending from a new connection picks a new one).
 */
import { createHash } from 'node:crypto';

const NOT_PART_OF_THE_EFFECT = new Set(['requestKey', 'outputToken']);

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` read the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value as Record<string, unknown>)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`);
    return `{${fields.join(',')}}`;
  }
  // undefined has no JSON: it reads as null.
  const json: unknown = JSON.stringify(value);
  return typeof json === 'string' ? json : 'null';
}

/** A digest of the method and the params that decide what a keyed request does. */
export function fingerprintRequest(method: string, params: Record<string, unknown>): string {
  const effect = Object.fromEntries(Object.entries(params).filter(([key]) => !NOT_PART_OF_THE_EFFECT.has(key)));
  return createHash('sha256').update(method).update('\0').update(canonicalJson(effect)).digest('hex');
}
