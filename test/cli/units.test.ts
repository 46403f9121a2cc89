/** The CLI's pure pieces: argument splitting, config pairs, tables, exit codes, job lines. */
import { describe, expect, it } from 'vitest';
import { joinDashValues, splitGlobalFlags } from '../../client/cli/args.js';
import { commandFromWords } from '../../client/cli/command-words.js';
import { parseEnvPairs } from '../../client/cli/env-pairs.js';
import { autostartServeArgs, DEFAULT_AUTOSTART_IDLE_EXIT_MS } from '../../client/ensure-daemon.js';
import { parseConfigPairs } from '../../client/cli/config-pairs.js';
import { CliError } from '../../client/cli/errors.js';
import { jobExitCode, signalExitCode } from '../../client/cli/exit-codes.js';
import { describeJob, jobMarker } from '../../client/cli/job-format.js';
import { formatBytes, formatDuration, formatTable } from '../../client/table.js';
import type { JobSnapshot } from '../../protocol/types.js';
import { jobSnapshot } from '../helpers/results.js';

const job = (fields: Partial<JobSnapshot>): JobSnapshot => jobSnapshot({ id: 'bash-1', ...fields });

describe('CLI units', () => {
  it('splits leading --socket/--state-dir off, in both spellings, and stops at the subcommand', () => {
    expect(splitGlobalFlags(['--socket', '/s', '--state-dir=/d', 'run', '--socket', 'x'])).toEqual({
      globals: { socketPath: '/s', stateDir: '/d' },
      rest: ['run', '--socket', 'x'],
    });
    expect(splitGlobalFlags(['jobs'])).toEqual({ globals: {}, rest: ['jobs'] });
    expect(() => splitGlobalFlags(['--socket'])).toThrow(CliError);
  });

  it('parses KEY=VALUE pairs as JSON when they are JSON, else as strings', () => {
    expect(parseConfigPairs(['timeoutMs=5000', 'enableRunInBackground=false', 'cwd=/srv/a=b'], 'config')).toEqual({
      timeoutMs: 5000,
      enableRunInBackground: false,
      cwd: '/srv/a=b',
    });
    expect(() => parseConfigPairs(['=1'], 'config')).toThrow('expected KEY=VALUE');
    expect(() => parseConfigPairs(['novalue'], 'config')).toThrow('expected KEY=VALUE');
  });

  it('names the subcommand in config pair errors, refuses unknown keys, and reads an empty value as unset', () => {
    expect(parseConfigPairs(['cwd='], 'config')).toEqual({ cwd: null });
    const usage = (pairs: string[], command: string, flag?: string) => {
      try {
        parseConfigPairs(pairs, command, flag);
      } catch (error) {
        return { message: (error as CliError).message, exitCode: (error as CliError).exitCode };
      }
      return undefined;
    };
    expect(usage(['bogus=1'], 'config')).toEqual({
      message: `execd config: unknown key "bogus" (see 'execd config --help')`,
      exitCode: 2,
    });
    expect(usage(['timeoutMs'], 'config')).toEqual({
      message: `execd config: expected KEY=VALUE, got "timeoutMs" (see 'execd config --help')`,
      exitCode: 2,
    });
    expect(usage(['timeoutMs'], 'serve', '--config')?.message).toBe(
      `execd serve: --config expects KEY=VALUE, got "timeoutMs" (see 'execd serve --help')`,
    );
  });

  it('quotes several words after -- as an argv, and passes one word as a script', () => {
    expect(commandFromWords(['ls -l | head'])).toBe('ls -l | head');
    expect(commandFromWords(['printf', '%s|', 'a  b'])).toBe("printf '%s|' 'a  b'");
    expect(commandFromWords(['ls', 'my dir', "it's", '', '$HOME', 'a;b'])).toBe(
      `ls 'my dir' 'it'\\''s' '' '$HOME' 'a;b'`,
    );
    expect(commandFromWords(['Get-ChildItem', 'my dir', "it's"], 'pwsh')).toBe(`& Get-ChildItem 'my dir' 'it''s'`);
  });

  it('parses --env NAME=VALUE pairs, values with = or empty, and refuses a pair without a name', () => {
    expect(parseEnvPairs([], 'run')).toBeUndefined();
    expect(parseEnvPairs(['A=1', 'B=x=y', 'C='], 'run')).toEqual({ A: '1', B: 'x=y', C: '' });
    expect(() => parseEnvPairs(['NOVALUE'], 'run')).toThrow(
      `execd run: --env expects NAME=VALUE with a variable name, got "NOVALUE"`,
    );
    expect(() => parseEnvPairs(['1X=2'], 'run')).toThrow('--env expects NAME=VALUE');
  });

  it('keeps a negative number after a string flag as its value, not as a flag', () => {
    const options = { timeout: { type: 'string' }, json: { type: 'boolean' } } as const;
    expect(joinDashValues(['--timeout', '-5', '--json', '--', '--timeout', '-1'], options)).toEqual([
      '--timeout=-5',
      '--json',
      '--',
      '--timeout',
      '-1',
    ]);
    expect(joinDashValues(['--json', '-5'], options)).toEqual(['--json', '-5']);
  });

  it('formats aligned tables without trailing blanks, durations and sizes', () => {
    expect(
      formatTable(
        ['ID', 'COMMAND'],
        [
          ['bash-10', 'echo a\nb'],
          ['bash-2', ''],
        ],
      ),
    ).toBe('ID       COMMAND\nbash-10  echo a b\nbash-2\n');
    expect([850, 12_000, 303_000, 7_440_000, 90_000_000].map(formatDuration)).toEqual([
      '850ms',
      '12s',
      '5m 3s',
      '2h 4m',
      '1d 1h',
    ]);
    expect([512, 12_595, 4 * 1024 * 1024].map(formatBytes)).toEqual(['512 B', '12.3 KiB', '4.0 MiB']);
  });

  it('maps outcomes to exit codes: own code, 128+n for signal n, 125 failed, 124 still running', () => {
    expect(signalExitCode('SIGTERM')).toBe(143);
    expect(signalExitCode('SIGKILL')).toBe(137);
    expect(signalExitCode('SIGNOPE')).toBe(125);
    expect(jobExitCode(job({ status: 'completed', exitCode: 3 }))).toBe(3);
    expect(jobExitCode(job({ status: 'killed', signal: 'SIGTERM' }))).toBe(143);
    expect(jobExitCode(job({ status: 'failed', detail: 'spawn failed: x' }))).toBe(125);
    expect(jobExitCode(job({ status: 'running' }))).toBe(124);
  });

  it("ends a job's output with the same markers as a run", () => {
    expect(jobMarker(job({ status: 'completed', exitCode: 0 }))).toBeUndefined();
    expect(jobMarker(job({ status: 'completed', exitCode: 2 }))).toBe('[exit code: 2]');
    expect(jobMarker(job({ status: 'killed', signal: 'SIGKILL' }))).toBe('[killed by signal: SIGKILL]');
    expect(jobMarker(job({ status: 'failed', detail: 'daemon restarted while the job was running' }))).toBe(
      '[job bash-1: failed (daemon restarted while the job was running)]',
    );
    expect(jobMarker(job({ status: 'killed', detail: 'killed before exit' }))).toBe('[job bash-1: killed]');
    expect(describeJob(job({ status: 'completed', exitCode: 0, detail: 'exit code: 0' }))).toBe(
      'bash-1 completed (exit code: 0)',
    );
  });

  it('gives an auto-started daemon an idle exit unless EXECD_IDLE_EXIT_MS says otherwise', () => {
    expect(autostartServeArgs({})).toEqual(['--idle-exit-ms', String(DEFAULT_AUTOSTART_IDLE_EXIT_MS)]);
    expect(autostartServeArgs({ EXECD_IDLE_EXIT_MS: '0' })).toEqual([]);
    expect(autostartServeArgs({ EXECD_IDLE_EXIT_MS: '250' })).toEqual(['--idle-exit-ms', '250']);
    expect(() => autostartServeArgs({ EXECD_IDLE_EXIT_MS: 'soon' })).toThrow('EXECD_IDLE_EXIT_MS');
  });
});
