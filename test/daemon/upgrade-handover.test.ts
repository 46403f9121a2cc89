/**
 * The pure parts of an upgrade in place: the handover file is taken only by the very process that
 * wrote it (pid and start time), with well-formed descriptors; a wait status decodes to an exit
 * code or a signal.
 */
import { describe, expect, it } from 'vitest';
import { parseHandover } from '../../daemon/upgrade/handover.js';
import { decodeWaitStatus } from '../../daemon/host/libc.js';

const me = { pid: 4242, startTime: 777 };
const file = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    holder: me,
    fromVersion: '0.1.0',
    listeners: [
      { kind: 'socket', fd: 21, path: '/run/execd.sock' },
      { kind: 'network', fd: 22, url: 'tls://0.0.0.0:7443' },
    ],
    pipes: [{ jobId: 'bash-1', stream: 'stderr', fd: 23 }],
    ...over,
  });

describe('the handover file', () => {
  it('is taken by the process that wrote it', () => {
    expect(parseHandover(file(), me)).toMatchObject({
      fromVersion: '0.1.0',
      listeners: [{ fd: 21 }, { fd: 22 }],
      pipes: [{ jobId: 'bash-1', stream: 'stderr', fd: 23 }],
    });
  });

  it('is ignored by another process, or a reused pid, and when it names stdio or is malformed', () => {
    expect(parseHandover(file(), { pid: 4243, startTime: 777 })).toBeUndefined();
    expect(parseHandover(file(), { pid: 4242, startTime: 778 })).toBeUndefined();
    expect(parseHandover(file({ listeners: [{ kind: 'socket', fd: 2, path: '/x' }] }), me)).toBeUndefined();
    expect(parseHandover(file({ pipes: [{ jobId: 'bash-1', stream: 'stdin', fd: 30 }] }), me)).toBeUndefined();
    expect(parseHandover('{"holder":', me)).toBeUndefined();
  });
});

describe('a wait status', () => {
  it('decodes an exit code and a signal', () => {
    expect(decodeWaitStatus(7 << 8)).toEqual({ exitCode: 7, signal: null });
    expect(decodeWaitStatus(0)).toEqual({ exitCode: 0, signal: null });
    expect(decodeWaitStatus(9)).toEqual({ exitCode: null, signal: 9 });
    expect(decodeWaitStatus(15 | 0x80)).toEqual({ exitCode: null, signal: 15 });
  });
});
