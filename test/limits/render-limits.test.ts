/** What the model reads of a limit that struck (SPEC §17): its line before the exit marker, byte for byte. */
import { describe, expect, it } from 'vitest';
import { parseExitStatus, renderProcessRead, renderResult } from '../../shared/render.js';
import type { JobReadResult } from '../../protocol/types.js';
import { jobSnapshot as job, runResult } from '../helpers/results.js';

const out = (text: string) => ({ text, truncated: false });
const stream = { text: '', from: 0, offset: 0, nextOffset: 0 };

describe('rendering of resource limits', () => {
  it('an out-of-memory kill: its line, then the signal marker last', () => {
    const result = runResult({
      stdout: out('loading\n'),
      exitCode: null,
      signal: 'SIGKILL',
      oomKilled: true,
      oomLimitBytes: 512 * 1024 * 1024,
    });
    const text = renderResult(result);
    expect(text).toBe('loading\n[killed: out of memory (limit 512 MiB)]\n[killed by signal: SIGKILL]');
    expect(parseExitStatus(text)).toEqual({
      body: 'loading\n[killed: out of memory (limit 512 MiB)]',
      signal: 'SIGKILL',
    });
  });

  it('a refused fork and a timeout: the timeout line, the process count line, the exit marker', () => {
    const result = runResult({
      exitCode: null,
      signal: 'SIGTERM',
      timedOut: true,
      timeoutMs: 3000,
      pidsLimitReached: 32,
      stderr: out('fork: retry: Resource temporarily unavailable\n'),
    });
    expect(renderResult(result)).toBe(
      '[stderr]\nfork: retry: Resource temporarily unavailable\n[timed out after 3000ms]\n' +
        '[limit: process count 32 reached]\n[killed by signal: SIGTERM]',
    );
  });

  it('nothing changes without a limit report', () => {
    const plain = runResult({ stdout: out('x\n'), exitCode: 3 });
    expect(renderResult(plain)).toBe('x\n[exit code: 3]');
  });

  it('a settled job read carries the line before its state and exit marker; a running one does not', () => {
    const read = (settled: boolean): JobReadResult => ({
      delta: 'partial\n',
      lossy: false,
      stdout: stream,
      stderr: stream,
      job: settled
        ? job({ status: 'killed', exitCode: null, signal: 'SIGKILL', oomKilled: true, oomLimitBytes: 64 << 20 })
        : job({ status: 'running' }),
    });
    expect(renderProcessRead(read(true))).toBe(
      'partial\n[killed: out of memory (limit 64 MiB)]\n[job bash-3: killed]\n[killed by signal: SIGKILL]',
    );
    expect(renderProcessRead(read(false))).toBe('partial\n[job bash-3: running]');
  });
});
