/**
 * Field rules shared by the protocol's schemas. Messages start with "must" so that a failure
 * reads `<field> <rule>` (see `formatZodError`). Each rule is a function building its schema, so
 * importing this module does not load zod (see `zod.ts`).
 */
import { isAbsolute } from 'node:path';
import type { z } from 'zod';
import { zod } from './zod.js';

const POSITIVE = 'must be a positive finite number';
const NUL_FREE = 'must not contain NUL bytes';

/**
 * Largest `stdoutMaxBytes` and `maxOutputBytes`: the tail a result carries as text. A larger one
 * could not be decoded into a string (V8 caps strings near 512 MiB) nor reach a client in one
 * answer; the complete stream is in the spill file anyway.
 */
export const MAX_CAPTURE_BYTES = 8 * 1024 * 1024;

/** True when a string has no NUL byte: execve, paths and environment entries cannot carry one. */
export const hasNoNul = (value: string): boolean => !value.includes('\0');

/** A string that reaches execve or a path: NUL bytes are refused, naming the field. */
export const nulFreeString = (rule = 'must be a string') =>
  zod().string({ error: rule }).refine(hasNoNul, { error: NUL_FREE });

/** A positive integer of at most `MAX_CAPTURE_BYTES`: how many bytes of a stream a result carries. */
export const captureBytes = () => {
  const tooLarge = `must be at most ${MAX_CAPTURE_BYTES}`;
  return positiveInt().max(MAX_CAPTURE_BYTES, { error: tooLarge });
};

/** A positive finite number (zero is never a "no limit" sentinel). */
export const positiveNumber = () => zod().number({ error: POSITIVE }).positive({ error: POSITIVE });

/** A positive integer. */
export const positiveInt = () => {
  const rule = 'must be a positive integer';
  return zod().number({ error: rule }).int({ error: rule }).positive({ error: rule });
};

/** An absolute filesystem path without NUL bytes. */
export const absolutePath = () =>
  zod()
    .string({ error: 'must be an absolute path' })
    .refine(isAbsolute, { error: 'must be an absolute path' })
    .refine(hasNoNul, { error: NUL_FREE });

/** The characters and length of a session id. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A session id: 1–128 characters of `[A-Za-z0-9._:-]`, but not `.` or `..`, which would name the
 * spill directory itself or the state dir (a session's directory is `<stateDir>/spill/<id>`).
 */
export const sessionIdSchema = () =>
  zod()
    .string({ error: 'must be a string' })
    .regex(SESSION_ID_PATTERN, { error: 'must be 1-128 characters of [A-Za-z0-9._:-]' })
    .refine((id) => id !== '.' && id !== '..', { error: 'must not be "." or ".."' });

/** What an environment variable's name may be: the names a shell can set and expand. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A map of environment variables: values free of NUL bytes (execve cannot carry them), names that
 * are variable names. A name like `FOO=BAR` would reach the program as `FOO=BAR=baz`, that is as
 * `FOO`; `INVALID-NAME` or an empty name cannot be read from a shell at all. The first bad name is
 * quoted in the error.
 */
export const envMapSchema = () =>
  zod()
    .record(zod().string(), nulFreeString())
    .superRefine((map, ctx) => {
      const keys = Object.keys(map);
      if (keys.some((key) => !hasNoNul(key))) {
        ctx.addIssue({ code: 'custom', message: 'keys must not contain NUL bytes' });
        return;
      }
      const bad = keys.find((key) => !ENV_NAME_PATTERN.test(key));
      if (bad !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `keys must be variable names (letters, digits and _, not starting with a digit): ${JSON.stringify(bad)} is not one`,
        });
      }
    })
    // The rule as JSON Schema states it (`execd schema`); the refinement above is what enforces it.
    .meta({ propertyNames: { type: 'string', pattern: ENV_NAME_PATTERN.source } });

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
