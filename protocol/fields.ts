/**
 * Field rules shared by the protocol's schemas. Messages start with "must" so that a failure
 * reads `<field> <rule>` (see `formatZodError`).
 */
import { isAbsolute } from 'node:path';
import { z } from 'zod';

const POSITIVE = 'must be a positive finite number';

/** A positive finite number (zero is never a "no limit" sentinel). */
export const positiveNumber = () => z.number({ error: POSITIVE }).positive({ error: POSITIVE });

/** A positive integer. */
export const positiveInt = () => {
  const rule = 'must be a positive integer';
  return z.number({ error: rule }).int({ error: rule }).positive({ error: rule });
};

/** An absolute filesystem path. */
export const absolutePath = () =>
  z.string({ error: 'must be an absolute path' }).refine(isAbsolute, { error: 'must be an absolute path' });

/** A session id: 1–128 characters of `[A-Za-z0-9._:-]`. */
export const SessionIdSchema = z
  .string({ error: 'must be a string' })
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, { error: 'must be 1-128 characters of [A-Za-z0-9._:-]' });

/** A map of environment variables. */
export const EnvMapSchema = z.record(z.string(), z.string({ error: 'must be a string' }));

/** A map of managed `DSH_*` variables; every key must start with `DSH_`. */
export const DshEnvMapSchema = EnvMapSchema.superRefine((map, ctx) => {
  for (const key of Object.keys(map)) {
    if (!key.startsWith('DSH_')) ctx.addIssue({ code: 'custom', message: `keys must start with DSH_ (got ${key})` });
  }
});

/** A job id, `bash-<n>`. */
export const JobIdSchema = z.string({ error: 'must be a string' }).regex(/^[a-z]+-\d+$/, { error: 'must look like bash-<n>' });

/**
 * One line naming the field and the rule of the first failure in a zod error, e.g.
 * `timeoutMs must be a positive finite number` or `command: Invalid input: expected string`.
 */
export function formatZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const field = issue.path.length > 0 ? issue.path.join('.') : 'params';
      return /^(must|keys) /.test(issue.message)
        ? `${field} ${issue.message}`
        : `${field}: ${issue.message}`;
    })
    .join('; ');
}
