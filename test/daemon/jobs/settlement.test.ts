/** The end of the job status machine, and the pid-reuse guard of crash recovery. */
import { describe, expect, it } from 'vitest';
import { groupStillOurs } from '../../../daemon/jobs/recovery.js';
import { ADOPTED_ENDED_DETAIL, DAEMON_RESTARTED_DETAIL, settlementOf } from '../../../daemon/jobs/settlement.js';
import type { ProcStat } from '../../../shared/proc.js';

describe('settlementOf', () => {
  it('appends a note on unsaved logs, and names a failed start or watcher', () => {
    expect(
      settlementOf({
        kind: 'exit',
        exitCode: 0,
        signal: null,
        killRequested: false,
        outputNote: 'stderr: output could not be saved: ENOSPC',
      }),
    ).toEqual({ status: 'completed', detail: 'exit code: 0; stderr: output could not be saved: ENOSPC' });
    expect(settlementOf({ kind: 'start-failed', reason: 'ENOSPC: no space left on device, write' })).toEqual({
      status: 'failed',
      detail: 'start failed: ENOSPC: no space left on device, write',
    });
    expect(settlementOf({ kind: 'watch-failed', reason: 'EMFILE' })).toEqual({
      status: 'failed',
      detail: 'following the process failed (it was killed): EMFILE',
    });
  });

  it('calls an end no daemon saw lost, never completed; a kill asked for killed', () => {
    expect(settlementOf({ kind: 'adopted-ended', killRequested: false })).toEqual({
      status: 'lost',
      detail: ADOPTED_ENDED_DETAIL,
    });
    expect(settlementOf({ kind: 'adopted-ended', killRequested: true })).toEqual({
      status: 'killed',
      detail: 'killed after a daemon restart',
    });
  });

  it('calls any exit by itself completed, whatever the code', () => {
    expect(settlementOf({ kind: 'exit', exitCode: 0, signal: null, killRequested: false })).toEqual({
      status: 'completed',
      detail: 'exit code: 0',
    });
    expect(settlementOf({ kind: 'exit', exitCode: 7, signal: null, killRequested: false })).toEqual({
      status: 'completed',
      detail: 'exit code: 7',
    });
  });

  it('calls a death by signal killed and names the signal', () => {
    expect(settlementOf({ kind: 'exit', exitCode: null, signal: 'SIGTERM', killRequested: true })).toEqual({
      status: 'killed',
      detail: 'signal: SIGTERM',
    });
    expect(settlementOf({ kind: 'exit', exitCode: null, signal: 'SIGKILL', killRequested: false })).toEqual({
      status: 'killed',
      detail: 'signal: SIGKILL',
    });
  });

  it('calls an exit with a code after a kill request killed before exit', () => {
    expect(settlementOf({ kind: 'exit', exitCode: 0, signal: null, killRequested: true })).toEqual({
      status: 'killed',
      detail: 'killed before exit',
    });
  });

  it('reports infrastructure failures as failed, never as killed', () => {
    expect(settlementOf({ kind: 'spawn-failed', reason: 'workdir does not exist: /x' })).toEqual({
      status: 'failed',
      detail: 'spawn failed: workdir does not exist: /x',
    });
    expect(settlementOf({ kind: 'runner-failed', reason: 'bwrap: setting up uid map' }).status).toBe('failed');
    expect(settlementOf({ kind: 'daemon-restarted' })).toEqual({ status: 'failed', detail: DAEMON_RESTARTED_DETAIL });
    expect(settlementOf({ kind: 'lost', reason: 'spawner process died (SIGKILL)' })).toEqual({
      status: 'failed',
      detail: 'spawner process died (SIGKILL)',
    });
  });
});

describe('groupStillOurs', () => {
  const leader = (startTime: number): ProcStat => ({
    pid: 100,
    state: 'S',
    ppid: 1,
    pgrp: 100,
    session: 100,
    startTime,
  });

  it('kills a group whose leader has the recorded start time', () => {
    expect(groupStillOurs(5000, leader(5000))).toBe(true);
  });

  it('never kills a reused pid: another start time, or none recorded', () => {
    expect(groupStillOurs(5000, leader(9000))).toBe(false);
    expect(groupStillOurs(undefined, leader(9000))).toBe(false);
  });

  it('kills what is left of a group whose leader is gone', () => {
    expect(groupStillOurs(5000, undefined)).toBe(true);
  });
});
