/** Arguments of the persistent bash and the terminal tools: exact messages and JSON Schemas (SPEC §9.2, §3.1). */
import { describe, expect, it } from 'vitest';
import { jsonSchemaOf } from '../../../client/tool/args.js';
import {
  persistentArgsSchema,
  terminalArgsSchemas,
  validatePersistentArgs,
  validateTerminalArgs,
  type TerminalToolName,
} from '../../../client/tool/terminal-args.js';
import { PERSISTENT_DESCRIPTION_HEAD, TERMINAL_SYSTEM_PROMPT } from '../../../client/tool/index.js';
import { persistentDescription, TERMINAL_TOOL_DESCRIPTIONS } from '../../../client/tool/terminal-description.js';

const base = { command: 'ls', description: 'List the files here' };

function persistentMessage(args: unknown): string | undefined {
  const validated = validatePersistentArgs(args);
  return validated.ok ? undefined : validated.message;
}

function terminalMessage(name: TerminalToolName, args: unknown): string | undefined {
  const validated = validateTerminalArgs(name, args);
  return validated.ok ? undefined : validated.message;
}

describe('persistent bash arguments', () => {
  it.each([
    ['an empty command', { ...base, command: '  ' }, 'invalid command: expected a non-empty string'],
    ['a missing description', { command: 'ls' }, 'invalid description: expected a non-empty string'],
    ['timeoutMs 0', { ...base, timeoutMs: 0 }, 'invalid timeoutMs: expected a positive number, got 0'],
    ['timeoutMs "5"', { ...base, timeoutMs: '5' }, 'invalid timeoutMs: expected a positive number, got "5"'],
    [
      'a workdir',
      { ...base, workdir: 'src' },
      'invalid workdir: the persistent bash shell keeps its own working directory; use cd in the command',
    ],
    [
      'run_in_background',
      { ...base, run_in_background: true },
      'invalid run_in_background: the persistent bash shell runs in the foreground; end the command with & to leave it running',
    ],
    ['a non-object', 42, 'invalid arguments: expected an object, got 42'],
  ])('refuses %s', (_name, args, message) => {
    expect(persistentMessage(args)).toBe(message);
  });

  it('accepts command, description and timeoutMs, and nothing else', () => {
    expect(validatePersistentArgs({ ...base, timeoutMs: 900 })).toEqual({
      ok: true,
      args: { ...base, timeoutMs: 900 },
    });
    expect(persistentMessage({ ...base, timeoutMs: 900, extra: 1 })).toBe(
      'invalid arguments: unknown key "extra" (accepted: command, description, timeoutMs)',
    );
  });

  it('advertises exactly command, description and timeoutMs', () => {
    const schema = jsonSchemaOf(persistentArgsSchema());
    expect(Object.keys(schema.properties as object)).toEqual(['command', 'description', 'timeoutMs']);
    expect(schema.required).toEqual(['command', 'description']);
    expect(schema.additionalProperties).toBe(false);
  });

  it('opens its description with the spec sentence, configurable', () => {
    expect(PERSISTENT_DESCRIPTION_HEAD).toBe(
      'Run commands in a persistent bash shell. State, including the current directory and exported environment variables, persists across calls for this agent.',
    );
    expect(persistentDescription().startsWith(`${PERSISTENT_DESCRIPTION_HEAD}\n`)).toBe(true);
    expect(persistentDescription('Custom head.').split('\n')[0]).toBe('Custom head.');
    expect(persistentDescription()).toContain('[exit code: N]');
    expect(persistentDescription()).toContain('typed into that program');
  });
});

describe('terminal tool arguments', () => {
  it.each([
    ['terminal_send', { text: 'x' }, 'invalid terminal_id: expected a non-empty string'],
    ['terminal_send', { terminal_id: '', text: 'x' }, 'invalid terminal_id: expected a non-empty string'],
    [
      'terminal_send',
      { terminal_id: 'bash-1', text: 'x' },
      'invalid terminal_id: expected an id such as term-1, got "bash-1"',
    ],
    ['terminal_send', { terminal_id: 'term-1' }, 'invalid text: expected a string, got undefined'],
    ['terminal_send', { terminal_id: 'term-1', text: 3 }, 'invalid text: expected a string, got 3'],
    [
      'terminal_send',
      { terminal_id: 'term-1', text: 'y', submit: 'yes' },
      'invalid submit: expected a boolean, got "yes"',
    ],
    [
      'terminal_send',
      { terminal_id: 'term-1', text: 'y', timeout_ms: -1 },
      'invalid timeout_ms: expected a positive number, got -1',
    ],
    [
      'terminal_read',
      { terminal_id: 'term-1', view: 'all' },
      'invalid view: expected one of stream, screen, got "all"',
    ],
    [
      'terminal_signal',
      { terminal_id: 'term-1', signal: 'SIGHUP' },
      'invalid signal: expected one of SIGINT, SIGQUIT, SIGTSTP, SIGTERM, SIGKILL, got "SIGHUP"',
    ],
    [
      'terminal_signal',
      { terminal_id: 'term-1' },
      'invalid signal: expected one of SIGINT, SIGQUIT, SIGTSTP, SIGTERM, SIGKILL, got undefined',
    ],
    ['terminal_open', { argv: [] }, 'invalid argv: expected a non-empty array of strings'],
    ['terminal_open', { argv: 'python3' }, 'invalid argv: expected a non-empty array of strings'],
    ['terminal_open', { argv: ['py\0thon'] }, 'invalid argv: an argument contains a NUL character'],
    ['terminal_open', { name: '' }, 'invalid name: expected a non-empty string'],
    ['terminal_open', { workdir: ' ' }, 'invalid workdir: expected a non-empty string'],
    ['terminal_close', null, 'invalid arguments: expected an object, got null'],
  ] as const)('%s refuses %j', (name, args, message) => {
    expect(terminalMessage(name, args)).toBe(message);
  });

  it('accepts valid arguments; submit may be left out and text may be empty', () => {
    expect(validateTerminalArgs('terminal_send', { terminal_id: 'term-12', text: '' })).toEqual({
      ok: true,
      args: { terminal_id: 'term-12', text: '' },
    });
    expect(validateTerminalArgs('terminal_open', { argv: ['python3', '-i'], name: 'repl' })).toMatchObject({
      ok: true,
    });
    expect(validateTerminalArgs('terminal_list', undefined)).toEqual({ ok: true, args: {} });
  });

  it('advertises each tool its parameters, required ones marked', () => {
    const schema = (name: TerminalToolName) => jsonSchemaOf(terminalArgsSchemas()[name]);
    expect(Object.keys(schema('terminal_open').properties as object)).toEqual(['name', 'argv', 'workdir']);
    expect(schema('terminal_open').required).toBeUndefined();
    expect(schema('terminal_send').required).toEqual(['terminal_id', 'text']);
    expect(Object.keys(schema('terminal_send').properties as object)).toEqual([
      'terminal_id',
      'text',
      'submit',
      'timeout_ms',
    ]);
    expect((schema('terminal_signal').properties as Record<string, { enum?: string[] }>).signal!.enum).toEqual([
      'SIGINT',
      'SIGQUIT',
      'SIGTSTP',
      'SIGTERM',
      'SIGKILL',
    ]);
    expect(schema('terminal_list')).toMatchObject({ type: 'object', properties: {}, additionalProperties: false });
    for (const name of Object.keys(TERMINAL_TOOL_DESCRIPTIONS))
      expect(schema(name as TerminalToolName).type).toBe('object');
  });

  it('has the spec system-prompt section', () => {
    expect(TERMINAL_SYSTEM_PROMPT.name).toBe('tool:terminal');
    expect(TERMINAL_SYSTEM_PROMPT.text).toBe(
      'Use a terminal session only when work needs persistent terminal state or interactive stdin; prefer bash for bounded one-shot commands. Track every terminal session id and close sessions that no longer matter. A "not proven ready" or timeout result does not prove the foreground command exited.',
    );
  });
});
