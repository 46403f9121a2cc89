/** Ownership lock files: exclusive, naming their holder, stale when the holder is dead or a reused pid. */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { holderAlive, holderOf, liveHolder, readHolder, tryLock } from '../../shared/lock-file.js';

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-lock-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('lock files', () => {
  it('is exclusive: a second attempt sees the live holder; release frees it', () => {
    const path = join(tempDir(), 'a.lock');
    const first = tryLock(path);
    expect(first.acquired).toBe(true);
    expect(readHolder(path)).toEqual(holderOf(process.pid));
    const second = tryLock(path);
    expect(second).toEqual({ acquired: false, holder: holderOf(process.pid) });
    if (first.acquired) first.release();
    expect(readHolder(path)).toBeUndefined();
    expect(tryLock(path).acquired).toBe(true);
  });

  it("leaves no temp files behind and release never removes someone else's lock", () => {
    const dir = tempDir();
    const path = join(dir, 'a.lock');
    const mine = tryLock(path);
    expect(readdirSync(dir)).toEqual(['a.lock']);
    writeFileSync(path, JSON.stringify({ pid: process.ppid }));
    if (mine.acquired) mine.release();
    expect(readHolder(path)).toEqual({ pid: process.ppid });
  });

  it('breaks the lock of a dead holder, of a reused pid, and of an unreadable file', async () => {
    const dir = tempDir();
    const child = spawn('true');
    const deadPid = child.pid!;
    await new Promise((resolve) => child.once('exit', resolve));
    for (const content of [
      JSON.stringify({ pid: deadPid }),
      JSON.stringify({ pid: process.pid, startTime: 1 }),
      'garbage',
    ]) {
      const path = join(dir, 'stale.lock');
      writeFileSync(path, content);
      expect(liveHolder(path)).toBeUndefined();
      const attempt = tryLock(path);
      expect(attempt.acquired).toBe(true);
      if (attempt.acquired) attempt.release();
    }
  });

  it('knows a live holder from a dead one', () => {
    expect(holderAlive(holderOf(process.pid))).toBe(true);
    expect(holderAlive({ pid: process.pid, startTime: holderOf(process.pid).startTime! + 1 })).toBe(false);
    expect(holderAlive({ pid: 0 })).toBe(false);
  });
});
