/**
 * Field rules shared by the protocol's schemas. Messages start with "must" so that a failure
 * reads `<field> <rule>` (see `formatZodError`). Each rule is a function building its schema, so
 * importing this module does not load zod (see `zod.ts`).
 */
import { isAbsolute } from 'node:path';
import type { z } from 'zod';
import { zod } from './zod.js';

const POSITIVE = 'must be a positive finite number';

/** A positive finite number (zero is never a "no limit" sentinel). */
export const positiveNumber = () => zod().number({ error: POSITIVE }).positive({ error: POSITIVE });

/** A positive integer. */
export const positiveInt = () => {
  const rule = 'must be a positive integer';
  return zod().number({ error: rule }).int({ error: rule }).positive({ error: rule });
};

/** An absolute filesystem path. */
export const absolutePath = () =>
  zod().string({ error: 'must be an absolute path' }).refine(isAbsolute, { error: 'must be an absolute path' });

/** A session id: 1–128 characters of `[A-Za-z0-9._:-]`. */
export const sessionIdSchema = () =>
  zod()
    .string({ error: 'must be a string' })
    .regex(/^[A-Za-z0-9._:-]{1,128}$/, { error: 'must be 1-128 characters of [A-Za-z0-9._:-]' });

/** A map of environment variables. */
export const envMapSchema = () => zod().record(zod().string(), zod().string({ error: 'must be a string' }));

/** A map of managed `DSH_*` variables; every key must start with `DSH_`. */
export const dshEnvMapSchema = () =>
  envMapSchema().superRefine((map, ctx) => {
    for (const key of Object.keys(map)) {
      if (!key.startsWith('DSH_')) ctx.addIssue({ code: 'custom', message: `keys must start with DSH_ (got ${key})` });
    }
  });

/** A job id, `bash-<n>`. */
export const jobIdSchema = () =>
  zod()
    .string({ error: 'must be a string' })
    .regex(/^[a-z]+-\d+$/, { error: 'must look like bash-<n>' });

/**
 * One line naming the field and the rule of the first failure in a zod error, e.g.
 * `timeoutMs must be a positive finite number` or `command: Invalid input: expected string`.
 */
export function formatZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const field = issue.path.length > 0 ? issue.path.join('.') : 'params';
      return /^(must|keys) /.test(issue.message) ? `${field} ${issue.message}` : `${field}: ${issue.message}`;
    })
    .join('; ');
}
