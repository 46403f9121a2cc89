/** The CLI's pure pieces: argument splitting, config pairs, tables, exit codes, job lines. */
import { describe, expect, it } from 'vitest';
import { splitGlobalFlags } from '../../client/cli/args.js';
import { autostartServeArgs, DEFAULT_AUTOSTART_IDLE_EXIT_MS } from '../../client/cli/ensure-daemon.js';
import { parseConfigPairs } from '../../client/cli/config-pairs.js';
import { CliError } from '../../client/cli/errors.js';
import { jobExitCode, signalExitCode } from '../../client/cli/exit-codes.js';
import { describeJob, jobMarker } from '../../client/cli/job-format.js';
import { formatBytes, formatDuration, formatTable } from '../../client/cli/table.js';
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
    expect(parseConfigPairs(['timeoutMs=5000', 'enableRunInBackground=false', 'cwd=/srv/a=b'])).toEqual({
      timeoutMs: 5000,
      enableRunInBackground: false,
      cwd: '/srv/a=b',
    });
    expect(() => parseConfigPairs(['=1'])).toThrow('expected KEY=VALUE');
    expect(() => parseConfigPairs(['novalue'])).toThrow('expected KEY=VALUE');
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
