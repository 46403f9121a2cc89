/**
 * The model's arguments (docs/library.md): one zod schema per configuration, from which both the JSON
 * Schema the model reads and the validation with its byte-exact messages come.
 */
import type { z } from 'zod';
import { BACKGROUND_DISABLED_MESSAGE } from '../../protocol/errors.js';
import { ESCALATION_TARGETS } from '../../protocol/sandbox.js';
import { lazySchema, zod, type Zod } from '../../protocol/zod.js';
import type { JsonSchema } from './types.js';

/** Which optional parameters a deployment offers. */
export interface ArgsConfig {
  /** `run_in_background` is advertised and accepted. */
  background: boolean;
  /** `sandbox_permissions` and `justification` are advertised and accepted. */
  escalation: boolean;
}

/** A value as quoted in a message: JSON, except for what JSON cannot say. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  // JSON.stringify gives undefined for a function or a symbol (its type says string).
  const json = JSON.stringify(value) as string | undefined;
  return json ?? typeof value;
}

/** A required string that must not be empty or whitespace only. */
export function nonEmptyString(z: Zod, field: string) {
  const message = `invalid ${field}: expected a non-empty string`;
  return z.string({ error: message }).refine((value) => value.trim().length > 0, { error: message });
}

/** A positive number named `field`, e.g. `invalid timeoutMs: expected a positive number, got -5`. */
export function positiveNumberArg(z: Zod, field: string) {
  const message = (issue: { input?: unknown }) =>
    `invalid ${field}: expected a positive number, got ${describeValue(issue.input)}`;
  return z.number({ error: message }).positive({ error: message });
}

/** The error of arguments that are not an object. */
export const notAnObject = (issue: { input?: unknown }) =>
  `invalid arguments: expected an object, got ${describeValue(issue.input)}`;

/** The parameter groups a configuration combines; built on first use (see `protocol/zod.ts`). */
export const shapes = lazySchema((z) => {
  const timeoutMs = positiveNumberArg(z, 'timeoutMs');
  return {
    /** The base parameters, offered in every configuration. */
    base: {
      command: nonEmptyString(z, 'command').describe('The command to run.'),
      description: nonEmptyString(z, 'description').describe(
        'What the command does, in 5-10 words; shown to the user.',
      ),
      timeoutMs: timeoutMs.optional().describe('Timeout in milliseconds (optional; capped by the deployment).'),
      workdir: nonEmptyString(z, 'workdir')
        .optional()
        .describe('Working directory; a relative path resolves against the session working directory.'),
    },
    background: {
      run_in_background: z
        .boolean({
          error: (issue) => `invalid run_in_background: expected a boolean, got ${describeValue(issue.input)}`,
        })
        .optional()
        .describe('Start the command as a background job and return its id at once.'),
    },
    escalation: {
      sandbox_permissions: z
        .enum(ESCALATION_TARGETS, {
          error: (issue) =>
            `invalid sandbox_permissions: expected one of ${ESCALATION_TARGETS.join(', ')}, got ${describeValue(issue.input)}`,
        })
        .optional()
        .describe('Ask the user to run this command under a wider sandbox mode (needs a justification).'),
      justification: nonEmptyString(z, 'justification')
        .optional()
        .describe('One sentence telling the user why the wider sandbox mode is needed.'),
    },
  };
});

/** The zod schema of the shell tool's arguments for a configuration. */
export function shellArgsSchema(config: ArgsConfig) {
  const { base, background, escalation } = shapes();
  return zod().object(
    {
      ...base,
      ...(config.background ? background : {}),
      ...(config.escalation ? escalation : {}),
    },
    { error: notAnObject },
  );
}

/** Validated arguments of one shell tool call. */
export interface ShellArgs {
  command: string;
  description: string;
  timeoutMs?: number;
  workdir?: string;
  run_in_background?: boolean;
  sandbox_permissions?: (typeof ESCALATION_TARGETS)[number];
  justification?: string;
}

/** The JSON Schema handed to the model for a configuration. */
export function shellArgsJsonSchema(config: ArgsConfig): JsonSchema {
  return jsonSchemaOf(shellArgsSchema(config));
}

/** The JSON Schema of a zod object, for a model (no `$schema` key, unknown keys refused). */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _ignored, ...rest } = zod().toJSONSchema(schema, { io: 'input' }) as JsonSchema;
  return { ...rest, additionalProperties: false };
}

/** The outcome of validating the model's arguments: the arguments, or the exact message. */
export type Validated<T> = { ok: true; args: T } | { ok: false; message: string };

/**
 * The message for keys the schema does not declare (its JSON Schema says `additionalProperties:
 * false`, so a caller sending one is told rather than ignored), or undefined when there is none.
 */
export function unknownKeysMessage(args: unknown, schema: { shape: Record<string, unknown> }): string | undefined {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return undefined;
  const known = Object.keys(schema.shape);
  const unknown = Object.keys(args).filter((key) => !known.includes(key));
  if (unknown.length === 0) return undefined;
  const names = unknown.slice(0, 5).map((key) => JSON.stringify(key.slice(0, 64)));
  return `invalid arguments: unknown ${unknown.length === 1 ? 'key' : 'keys'} ${names.join(', ')}${unknown.length > 5 ? ', …' : ''} (accepted: ${known.join(', ')})`;
}

function hasKey(args: unknown, key: string): boolean {
  return typeof args === 'object' && args !== null && Object.hasOwn(args, key);
}

/**
 * Validates the model's arguments before anything reaches the daemon. Keys the schema did not
 * advertise are refused: those that would change what runs with their own message, others as unknown.
 */
export function validateShellArgs(args: unknown, config: ArgsConfig): Validated<ShellArgs> {
  if (!config.background && hasKey(args, 'run_in_background'))
    return { ok: false, message: BACKGROUND_DISABLED_MESSAGE };
  if (!config.escalation && (hasKey(args, 'sandbox_permissions') || hasKey(args, 'justification'))) {
    return { ok: false, message: 'sandbox_permissions is not available: this session offers no sandbox escalation' };
  }
  const schema = shellArgsSchema(config);
  const parsed = schema.safeParse(args);
  if (!parsed.success) return { ok: false, message: parsed.error.issues[0]!.message };
  const unknown = unknownKeysMessage(args, schema);
  if (unknown !== undefined) return { ok: false, message: unknown };
  const valid = parsed.data as ShellArgs;
  const pairing = checkEscalationPair(valid);
  return pairing ? { ok: false, message: pairing } : { ok: true, args: valid };
}

/** `sandbox_permissions` and `justification` come together; the message when they do not. */
function checkEscalationPair(args: ShellArgs): string | undefined {
  if (args.sandbox_permissions !== undefined && args.justification === undefined) {
    return 'invalid sandbox_permissions: a non-empty justification is required with it';
  }
  if (args.justification !== undefined && args.sandbox_permissions === undefined) {
    return 'invalid justification: it is only accepted together with sandbox_permissions';
  }
  return undefined;
}

/** The schema of `job_output` and `job_kill` (built on first use). */
export const jobArgsSchema = lazySchema((z) =>
  z.object(
    { job_id: nonEmptyString(z, 'job_id').describe('The id of a background job, e.g. bash-3.') },
    { error: notAnObject },
  ),
);

/** The longest `wait_ms` the daemon accepts; a longer one is capped to it. */
export const MAX_WAIT_MS = 30_000;

/** The schema of `job_output`: a job id and an optional wait (built on first use). */
export const jobOutputArgsSchema = lazySchema((z) => {
  const message = (issue: { input: unknown }) =>
    `invalid wait_ms: expected a positive number, got ${describeValue(issue.input)}`;
  return jobArgsSchema().extend({
    wait_ms: z
      .number({ error: message })
      .positive({ error: message })
      .refine(Number.isFinite, { error: message })
      .optional()
      .describe(
        `Wait up to this many milliseconds (at most ${MAX_WAIT_MS}) for new output when there is none yet; ` +
          'returns as soon as output arrives or the job ends.',
      ),
    wait_for: z
      .object(
        {
          output: z.string({ error: 'invalid wait_for.output: expected a regular expression' }).min(1).optional(),
          port: z
            .number({ error: 'invalid wait_for.port: expected a TCP port from 1 to 65535' })
            .int({ error: 'invalid wait_for.port: expected a TCP port from 1 to 65535' })
            .min(1, { error: 'invalid wait_for.port: expected a TCP port from 1 to 65535' })
            .max(65_535, { error: 'invalid wait_for.port: expected a TCP port from 1 to 65535' })
            .optional(),
          path: z.string({ error: 'invalid wait_for.path: expected a path' }).min(1).optional(),
        },
        { error: (issue) => `invalid wait_for: expected an object, got ${describeValue(issue.input)}` },
      )
      .optional()
      .describe(
        'Wait (up to wait_ms, default 30000) until the output matches the regular expression `output`, ' +
          'TCP `port` on localhost accepts connections, or `path` exists, or the job ends; then read.',
      ),
  });
});

/** What `job_output` waits for (`wait_for`). */
export interface WaitFor {
  output?: string;
  port?: number;
  path?: string;
}

/** The schema of `job_list`: no arguments. */
export const jobListArgsSchema = lazySchema((z) =>
  z.object({}, { error: (issue) => `invalid arguments: expected an object, got ${describeValue(issue.input)}` }),
);

/** Validates the arguments of `job_output`; `wait_ms` above the daemon's maximum is capped. */
export function validateJobOutputArgs(
  args: unknown,
): Validated<{ job_id: string; wait_ms?: number; wait_for?: WaitFor }> {
  const parsed = jobOutputArgsSchema().safeParse(args);
  if (!parsed.success) return { ok: false, message: parsed.error.issues[0]!.message };
  const { job_id, wait_ms, wait_for } = parsed.data;
  return {
    ok: true,
    args: {
      job_id,
      ...(wait_ms !== undefined && { wait_ms: Math.min(wait_ms, MAX_WAIT_MS) }),
      ...(wait_for !== undefined && { wait_for }),
    },
  };
}

/** Validates the arguments of a job tool. */
export function validateJobArgs(args: unknown): Validated<{ job_id: string }> {
  const parsed = jobArgsSchema().safeParse(args);
  return parsed.success ? { ok: true, args: parsed.data } : { ok: false, message: parsed.error.issues[0]!.message };
}
