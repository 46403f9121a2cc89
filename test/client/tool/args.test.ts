/** The model's arguments: exact validation messages and the JSON Schema per configuration (SPEC §3.1). */
import { describe, expect, it } from 'vitest';
import { shellArgsJsonSchema, validateJobArgs, validateShellArgs, type ArgsConfig } from '../../../client/tool/args.js';
import { BACKGROUND_DISABLED_MESSAGE } from '../../../protocol/errors.js';

const ALL: ArgsConfig = { background: true, escalation: true };
const NONE: ArgsConfig = { background: false, escalation: false };
const base = { command: 'ls', description: 'List the files here' };

function messageOf(args: unknown, config: ArgsConfig = ALL): string | undefined {
  const validated = validateShellArgs(args, config);
  return validated.ok ? undefined : validated.message;
}

describe('validateShellArgs messages, byte for byte', () => {
  it.each([
    ['an empty command', { ...base, command: '' }, 'invalid command: expected a non-empty string'],
    ['a whitespace-only command', { ...base, command: ' \t\n ' }, 'invalid command: expected a non-empty string'],
    ['a missing command', { description: 'x y z w v' }, 'invalid command: expected a non-empty string'],
    ['a non-string command', { ...base, command: 42 }, 'invalid command: expected a non-empty string'],
    ['an empty description', { ...base, description: '' }, 'invalid description: expected a non-empty string'],
    [
      'a whitespace-only description',
      { ...base, description: '   ' },
      'invalid description: expected a non-empty string',
    ],
    ['a missing description', { command: 'ls' }, 'invalid description: expected a non-empty string'],
    ['timeoutMs 0', { ...base, timeoutMs: 0 }, 'invalid timeoutMs: expected a positive number, got 0'],
    ['timeoutMs -5', { ...base, timeoutMs: -5 }, 'invalid timeoutMs: expected a positive number, got -5'],
    ['timeoutMs "abc"', { ...base, timeoutMs: 'abc' }, 'invalid timeoutMs: expected a positive number, got "abc"'],
    ['timeoutMs null', { ...base, timeoutMs: null }, 'invalid timeoutMs: expected a positive number, got null'],
    ['timeoutMs NaN', { ...base, timeoutMs: Number.NaN }, 'invalid timeoutMs: expected a positive number, got NaN'],
    [
      'timeoutMs Infinity',
      { ...base, timeoutMs: Infinity },
      'invalid timeoutMs: expected a positive number, got Infinity',
    ],
    ['an empty workdir', { ...base, workdir: '' }, 'invalid workdir: expected a non-empty string'],
    [
      'a non-boolean run_in_background',
      { ...base, run_in_background: 'yes' },
      'invalid run_in_background: expected a boolean, got "yes"',
    ],
    ['arguments that are not an object', 'ls', 'invalid arguments: expected an object, got "ls"'],
  ])('refuses %s', (_name, args, message) => {
    expect(messageOf(args)).toBe(message);
  });

  it('refuses run_in_background sent while disabled, with the deployment message', () => {
    expect(messageOf({ ...base, run_in_background: true }, NONE)).toBe(
      'run_in_background is disabled for this deployment (enableRunInBackground: false)',
    );
    expect(messageOf({ ...base, run_in_background: false }, NONE)).toBe(BACKGROUND_DISABLED_MESSAGE);
  });

  it('checks the command first', () => {
    expect(messageOf({ command: '', description: '', timeoutMs: 0 })).toBe(
      'invalid command: expected a non-empty string',
    );
  });

  it('accepts valid arguments and refuses keys the schema does not declare', () => {
    expect(validateShellArgs({ ...base, timeoutMs: 1500, workdir: 'src' }, NONE)).toEqual({
      ok: true,
      args: { ...base, timeoutMs: 1500, workdir: 'src' },
    });
    expect(messageOf({ ...base, workdir: 'src', note: 'x' }, NONE)).toBe(
      'invalid arguments: unknown key "note" (accepted: command, description, timeoutMs, workdir)',
    );
    expect(validateShellArgs({ ...base, run_in_background: true }, ALL)).toEqual({
      ok: true,
      args: { ...base, run_in_background: true },
    });
  });
});

describe('sandbox_permissions and justification', () => {
  it('come together', () => {
    expect(messageOf({ ...base, sandbox_permissions: 'workspace-write' })).toBe(
      'invalid sandbox_permissions: a non-empty justification is required with it',
    );
    expect(messageOf({ ...base, justification: 'needs to write the build dir' })).toBe(
      'invalid justification: it is only accepted together with sandbox_permissions',
    );
  });

  it('refuse an empty justification and a target outside the closed list', () => {
    expect(messageOf({ ...base, sandbox_permissions: 'workspace-write', justification: ' ' })).toBe(
      'invalid justification: expected a non-empty string',
    );
    expect(messageOf({ ...base, sandbox_permissions: 'root', justification: 'why' })).toBe(
      'invalid sandbox_permissions: expected one of workspace-write, danger-full-access, got "root"',
    );
    expect(messageOf({ ...base, sandbox_permissions: 'read-only', justification: 'why' })).toBe(
      'invalid sandbox_permissions: expected one of workspace-write, danger-full-access, got "read-only"',
    );
  });

  it('are refused when no escalation is offered', () => {
    const message = 'sandbox_permissions is not available: this session offers no sandbox escalation';
    expect(messageOf({ ...base, sandbox_permissions: 'danger-full-access', justification: 'why' }, NONE)).toBe(message);
    expect(messageOf({ ...base, justification: 'why' }, NONE)).toBe(message);
  });

  it('pass together', () => {
    const args = { ...base, sandbox_permissions: 'danger-full-access', justification: 'install into /usr/local' };
    expect(validateShellArgs(args, ALL)).toEqual({ ok: true, args });
  });
});

describe('the JSON Schema per configuration', () => {
  const cases: Array<[string, ArgsConfig, string[]]> = [
    ['nothing optional', NONE, ['command', 'description', 'timeoutMs', 'workdir']],
    [
      'background',
      { background: true, escalation: false },
      ['command', 'description', 'timeoutMs', 'workdir', 'run_in_background'],
    ],
    [
      'escalation',
      { background: false, escalation: true },
      ['command', 'description', 'timeoutMs', 'workdir', 'sandbox_permissions', 'justification'],
    ],
    [
      'both',
      ALL,
      ['command', 'description', 'timeoutMs', 'workdir', 'run_in_background', 'sandbox_permissions', 'justification'],
    ],
  ];
  it.each(cases)('advertises exactly the parameters of §3.1 with %s', (_name, config, keys) => {
    const schema = shellArgsJsonSchema(config) as {
      type: string;
      properties: Record<string, unknown>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(schema.type).toBe('object');
    expect(Object.keys(schema.properties)).toEqual(keys);
    expect(schema.required).toEqual(['command', 'description']);
    expect(schema.additionalProperties).toBe(false);
  });

  it('types each parameter', () => {
    const { properties } = shellArgsJsonSchema(ALL) as { properties: Record<string, Record<string, unknown>> };
    expect(properties.command).toMatchObject({ type: 'string' });
    expect(properties.description).toMatchObject({ type: 'string' });
    expect(properties.timeoutMs).toMatchObject({ type: 'number', exclusiveMinimum: 0 });
    expect(properties.workdir).toMatchObject({ type: 'string' });
    expect(properties.run_in_background).toMatchObject({ type: 'boolean' });
    expect(properties.sandbox_permissions).toMatchObject({
      type: 'string',
      enum: ['workspace-write', 'danger-full-access'],
    });
    expect(properties.justification).toMatchObject({ type: 'string' });
    for (const property of Object.values(properties)) expect(typeof property.description).toBe('string');
  });
});

describe('validateJobArgs', () => {
  it('needs a job id', () => {
    expect(validateJobArgs({})).toEqual({ ok: false, message: 'invalid job_id: expected a non-empty string' });
    expect(validateJobArgs({ job_id: 'bash-1' })).toEqual({ ok: true, args: { job_id: 'bash-1' } });
  });
});
