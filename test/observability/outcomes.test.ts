/** The pure parts of observability: the `--metrics` address, result labels, the audit log's cut. */
import { describe, expect, it } from 'vitest';
import { parseMetricsUrl } from '../../daemon/observability/address.js';
import { cutUtf8 } from '../../daemon/observability/audit-log.js';
import { resultOf, terminalRunEnd } from '../../daemon/observability/command-outcome.js';
import type { TerminalRunResult } from '../../protocol/terminal.js';

describe('--metrics address', () => {
  it('takes http, tcp (plain, any address), https and tls (TLS)', () => {
    expect(parseMetricsUrl('http://0.0.0.0:9464')).toEqual({ tls: false, host: '0.0.0.0', port: 9464 });
    expect(parseMetricsUrl('tcp://127.0.0.1:9464/')).toEqual({ tls: false, host: '127.0.0.1', port: 9464 });
    expect(parseMetricsUrl('https://[::1]:443')).toEqual({ tls: true, host: '::1', port: 443 });
    expect(parseMetricsUrl('tls://pod.local:9464')).toEqual({ tls: true, host: 'pod.local', port: 9464 });
    expect(parseMetricsUrl('ftp://h:1')).toMatch(/^--metrics must be http:\/\/HOST:PORT/);
    expect(parseMetricsUrl('http://h:99999')).toBe('--metrics port must be at most 65535, got 99999');
    expect(parseMetricsUrl('http://h:1/metrics')).toMatch(/^--metrics must be/);
  });
});

describe('result labels', () => {
  const base = { exitCode: 0, signal: null, timedOut: false, killed: false, denied: false };
  it('decide oom, timeout, killed, denied, then the exit code', () => {
    expect(resultOf(base)).toBe('ok');
    expect(resultOf({ ...base, exitCode: 2 })).toBe('error');
    expect(resultOf({ ...base, exitCode: 1, denied: true })).toBe('denied');
    expect(resultOf({ ...base, exitCode: null, signal: 'SIGKILL' })).toBe('killed');
    expect(resultOf({ ...base, killed: true, denied: true })).toBe('killed');
    expect(resultOf({ ...base, timedOut: true, signal: 'SIGTERM' })).toBe('timeout');
    expect(resultOf({ ...base, oomKilled: true, signal: 'SIGKILL' })).toBe('oom');
  });

  it('count a terminal run that returned before its command ended as ok', () => {
    const run = (state: TerminalRunResult['state'], exitCode?: number) =>
      terminalRunEnd({ state, outputBytes: 3, ...(exitCode !== undefined && { exitCode }) } as TerminalRunResult, 5)
        .result;
    expect(run('completed', 0)).toBe('ok');
    expect(run('completed', 1)).toBe('error');
    expect(run('timed_out')).toBe('timeout');
    expect(run('exited')).toBe('killed');
    expect(run('waiting_for_input')).toBe('ok');
  });
});

describe("the audit log's command cut", () => {
  it('cuts at 4 KiB of UTF-8 on a character boundary and says so', () => {
    expect(cutUtf8('short', 4096)).toEqual({ text: 'short', cut: false });
    const euros = '€'.repeat(2000); // 3 bytes each: 6,000 bytes
    const cut = cutUtf8(euros, 4096);
    expect(cut).toEqual({ text: '€'.repeat(1365), cut: true });
    expect(Buffer.byteLength(cut.text)).toBe(4095);
  });
});
