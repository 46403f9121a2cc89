/**
 * A client in another language (SPEC §11): Python's standard library alone (socket + json, the
 * Content-Length framing) drives a real daemon through the handshake, a run, a job and rendering.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { renderResult } from '../../shared/render.js';
import type { JobSnapshot, ShellRunResult } from '../../protocol/types.js';
import { startDaemon } from '../helpers/daemon.js';

const SCRIPT = join(import.meta.dirname, 'python', 'drive_execd.py');

describe('a Python client with the standard library alone', () => {
  it('authenticates, opens a session, runs a command, reads and kills a job, and renders', async () => {
    const daemon = await startDaemon();
    const { stdout } = await promisify(execFile)('python3', [SCRIPT, daemon.socketPath, daemon.stateDir, daemon.dir], {
      timeout: 60_000,
    });
    const out = JSON.parse(stdout) as Record<string, unknown>;
    expect(out.before_initialize).toMatchObject({ code: -32001, data: { code: 'UNAUTHORIZED' } });
    expect(out.initialize).toMatchObject({ protocolVersion: 1, capabilities: { shell: 'bash', streaming: true } });
    expect(out.session_open).toEqual({ sessionId: 'py', reattached: false, jobs: [] });
    const run = out.shell_run as ShellRunResult;
    expect(run).toMatchObject({ exitCode: 3, signal: null, timedOut: false, aborted: false });
    expect(run.stdout.text).toBe('hello from py\n');
    expect(out.bad_params).toMatchObject({ code: -32602 });
    expect((out.bad_params as { message: string }).message).toContain('timeoutMs');
    expect(out.shell_start).toMatchObject({ jobId: expect.stringMatching(/^bash-\d+$/) as unknown });
    expect((out.job_read as { delta: string }).delta).toBe('job-out\n');
    expect(out.job_kill).toEqual({ killed: true });
    expect((out.job_wait as JobSnapshot).status).toBe('killed');
    expect(out.render_result).toEqual({ text: renderResult(run) });
    expect((out.render_result as { text: string }).text).toBe('hello from py\n[exit code: 3]');
    expect(out.unknown_method).toMatchObject({ code: -32601 });
    expect(out.fs_write).toMatchObject({ size: 1024 });
    expect(out.fs_read_matches).toBe(true);
    expect(out.fs_read).toEqual({
      bytes: 1024,
      eof: true,
      size: 1024,
      version: (out.fs_write as { version: string }).version,
    });
    expect(readFileSync(join(daemon.dir, 'py-file.bin'))).toEqual(
      Buffer.from(Array.from({ length: 1024 }, (_, i) => i % 256)),
    );
  });
});
