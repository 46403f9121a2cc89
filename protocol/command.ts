/**
 * The command of `shell/run`, `shell/resolve` and `shell/start`: it reaches `bash -c` as one
 * argument, and Linux refuses an argument longer than 32 pages (`MAX_ARG_STRLEN`, 128 KiB with its
 * terminating NUL) with E2BIG, so a longer command is refused up front, naming the limit.
 */
import { hasNoNul } from './fields.js';
import { zod } from './zod.js';

/** Largest command, in UTF-8 bytes: 128 KiB less the argument's terminating NUL. */
export const MAX_COMMAND_BYTES = 128 * 1024 - 1;

/** The rule of a command that is too long. */
export const COMMAND_TOO_LONG = `must be at most ${MAX_COMMAND_BYTES} bytes (the kernel's limit on one argument); write a longer script to a file and run that`;

/** A non-empty command without NUL bytes of at most `MAX_COMMAND_BYTES`. */
export const commandSchema = () =>
  zod()
    .string({ error: 'must be a non-empty string' })
    .min(1, { error: 'must be a non-empty string' })
    .refine(hasNoNul, { error: 'must not contain NUL bytes' })
    .refine((text) => text.length <= MAX_COMMAND_BYTES / 3 || Buffer.byteLength(text) <= MAX_COMMAND_BYTES, {
      error: COMMAND_TOO_LONG,
    });
