/**
 * The model's arguments of the persistent `bash` and of the terminal tools (docs/library.md): one zod
 * schema per tool, from which both the JSON Schema the model reads and the validation with its
 * byte-exact messages (in the style of the `bash` tool's) come.
 */
import { lazySchema, type Zod } from '../../protocol/zod.js';
import {
  describeValue,
  nonEmptyString,
  notAnObject,
  positiveNumberArg,
  shapes,
  unknownKeysMessage,
  type Validated,
} from './args.js';

/** The signals `terminal_signal` may deliver to a terminal's foreground process group. */
export const TERMINAL_TOOL_SIGNALS = ['SIGINT', 'SIGQUIT', 'SIGTSTP', 'SIGTERM', 'SIGKILL'] as const;

/** A signal `terminal_signal` accepts. */
export type TerminalToolSignal = (typeof TERMINAL_TOOL_SIGNALS)[number];

/** What `terminal_read` shows: the byte stream, or the current screen. */
export const TERMINAL_VIEWS = ['stream', 'screen'] as const;

/** A view of `terminal_read`. */
export type TerminalView = (typeof TERMINAL_VIEWS)[number];

/** One of a closed list, e.g. `invalid view: expected one of stream, screen, got "all"`. */
function oneOf<const T extends readonly [string, ...string[]]>(z: Zod, field: string, values: T) {
  return z.enum(values, {
    error: (issue) => `invalid ${field}: expected one of ${values.join(', ')}, got ${describeValue(issue.input)}`,
  });
}

function booleanArg(z: Zod, field: string) {
  return z.boolean({ error: (issue) => `invalid ${field}: expected a boolean, got ${describeValue(issue.input)}` });
}

/** Keys the persistent `bash` refuses because they would silently change nothing it does. */
const PERSISTENT_REFUSED: Record<string, string> = {
  workdir: 'invalid workdir: the persistent bash shell keeps its own working directory; use cd in the command',
  run_in_background:
    'invalid run_in_background: the persistent bash shell runs in the foreground; end the command with & to leave it running',
};

/** The persistent `bash`'s parameters: `command`, `description`, `timeoutMs`. */
export const persistentArgsSchema = lazySchema((z) => {
  const { command, description, timeoutMs } = shapes().base;
  return z.object(
    {
      command,
      description,
      timeoutMs: timeoutMs.describe(
        'Timeout in milliseconds (optional; capped by the deployment). On timeout the command is interrupted.',
      ),
    },
    { error: notAnObject },
  );
});

/** Validated arguments of one persistent `bash` call. */
export interface PersistentArgs {
  command: string;
  description: string;
  timeoutMs?: number;
}

function firstIssue(
  parsed: { success: true; data: unknown } | { success: false; error: { issues: { message: string }[] } },
) {
  return parsed.success
    ? ({ ok: true, args: parsed.data } as const)
    : ({ ok: false, message: parsed.error.issues[0]!.message } as const);
}

/** Validates the persistent `bash`'s arguments; `workdir` and `run_in_background` are refused. */
export function validatePersistentArgs(args: unknown): Validated<PersistentArgs> {
  if (typeof args === 'object' && args !== null) {
    for (const [key, message] of Object.entries(PERSISTENT_REFUSED))
      if (Object.hasOwn(args, key)) return { ok: false, message };
  }
  const validated = firstIssue(persistentArgsSchema().safeParse(args)) as Validated<PersistentArgs>;
  const unknown = validated.ok ? unknownKeysMessage(args, persistentArgsSchema()) : undefined;
  return unknown === undefined ? validated : { ok: false, message: unknown };
}

/** The shape of a terminal id (`term-<n>`). */
const TERMINAL_ID = /^term-\d{1,15}$/;

/** The terminal tools' schemas, one per tool (built on first use). */
export const terminalArgsSchemas = lazySchema((z) => {
  const terminalId = nonEmptyString(z, 'terminal_id')
    .refine((id) => TERMINAL_ID.test(id), {
      error: (issue) => `invalid terminal_id: expected an id such as term-1, got ${describeValue(issue.input)}`,
    })
    .describe('The id terminal_open returned, e.g. term-3.');
  const options = { error: notAnObject };
  const argv = z
    .array(z.string(), { error: 'invalid argv: expected a non-empty array of strings' })
    .min(1, { error: 'invalid argv: expected a non-empty array of strings' })
    .refine((items) => items.every((item) => !item.includes('\0')), {
      error: 'invalid argv: an argument contains a NUL character',
    })
    .refine((items) => items.length === 0 || items[0]!.trim().length > 0, {
      error: 'invalid argv: the program name is empty',
    });
  return {
    terminal_open: z.object(
      {
        name: nonEmptyString(z, 'name').optional().describe('A short label for the terminal, e.g. "python repl".'),
        argv: argv
          .optional()
          .describe('A program and its arguments to run instead of an interactive bash, e.g. ["python3", "-i"].'),
        workdir: nonEmptyString(z, 'workdir')
          .optional()
          .describe('Working directory; a relative path resolves against the session working directory.'),
      },
      options,
    ),
    terminal_send: z.object(
      {
        terminal_id: terminalId,
        text: z
          .string({ error: (issue) => `invalid text: expected a string, got ${describeValue(issue.input)}` })
          .describe('The text to type. May be empty (with submit, just Enter).'),
        submit: booleanArg(z, 'submit').optional().describe('Press Enter after the text (default true).'),
        timeout_ms: positiveNumberArg(z, 'timeout_ms')
          .optional()
          .describe('How long to wait for the program to be ready again (optional).'),
      },
      options,
    ),
    terminal_read: z.object(
      {
        terminal_id: terminalId,
        view: oneOf(z, 'view', TERMINAL_VIEWS)
          .optional()
          .describe(
            '"stream" (default): the output since your last send or read; "screen": what the screen shows now.',
          ),
      },
      options,
    ),
    terminal_signal: z.object(
      {
        terminal_id: terminalId,
        signal: oneOf(z, 'signal', TERMINAL_TOOL_SIGNALS).describe(
          'The signal for the foreground program: SIGINT is Ctrl-C, SIGTSTP Ctrl-Z, SIGQUIT Ctrl-\\.',
        ),
      },
      options,
    ),
    terminal_close: z.object({ terminal_id: terminalId }, options),
    terminal_list: z.object({}, options),
  };
});

/** The name of a terminal tool. */
export type TerminalToolName = keyof ReturnType<typeof terminalArgsSchemas>;

/** Validated arguments of each terminal tool. */
export interface TerminalArgs {
  terminal_open: { name?: string; argv?: string[]; workdir?: string };
  terminal_send: { terminal_id: string; text: string; submit?: boolean; timeout_ms?: number };
  terminal_read: { terminal_id: string; view?: TerminalView };
  terminal_signal: { terminal_id: string; signal: TerminalToolSignal };
  terminal_close: { terminal_id: string };
  terminal_list: Record<string, never>;
}

/** Validates one terminal tool's arguments; unknown keys are ignored. */
export function validateTerminalArgs<N extends TerminalToolName>(name: N, args: unknown): Validated<TerminalArgs[N]> {
  // terminal_list takes nothing: a missing argument object is as good as an empty one.
  const input = name === 'terminal_list' && args === undefined ? {} : args;
  const schema: { safeParse(input: unknown): Parameters<typeof firstIssue>[0] } = terminalArgsSchemas()[name];
  return firstIssue(schema.safeParse(input)) as Validated<TerminalArgs[N]>;
}
