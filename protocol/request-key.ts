/**
 * Request keys (docs/reconnect.md): an optional `requestKey` on every request with a side effect, so a
 * client that lost an answer can send the request again without acting twice.
 */
import type { z } from 'zod';
import type { Zod } from './zod.js';

/** Longest `requestKey`, in characters. */
export const MAX_REQUEST_KEY_CHARS = 128;

/** A request key: 1–128 characters. */
export const requestKeySchema = (z: Zod) => {
  const rule = `must be a string of 1-${MAX_REQUEST_KEY_CHARS} characters`;
  return z.string({ error: rule }).min(1, { error: rule }).max(MAX_REQUEST_KEY_CHARS, { error: rule });
};

/** `schema` with the optional `requestKey` field of a keyed request added. */
export function withRequestKey<Shape extends z.core.$ZodShape, C extends z.core.$ZodObjectConfig>(
  z: Zod,
  schema: z.ZodObject<Shape, C>,
) {
  return schema.extend({ requestKey: requestKeySchema(z).optional() });
}

/** The message of a key sent again with other params (an `INVALID_PARAMS` answer). */
export const REQUEST_KEY_REUSED = 'requestKey reused with other params';
