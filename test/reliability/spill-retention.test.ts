/**
 * The spill retention sweep (SPEC §1.5): files of settled runs are removed by age, at start-up and
 * while the daemon runs; a file still being written is never removed, however old.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startDaemon } from '../helpers/daemon.js';
import { startHeldRun } from '../helpers/held-run.js';
import { waitFor } from '../helpers/wait.js';

describe('spill retention sweep', () => {
  it('removes files older than spillRetentionMs at start-up and keeps younger ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-sweep-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const stateDir = join(dir, 'state');
    const sessionDir = join(stateDir, 'spill', 'earlier-session');
    mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
    const old = join(sessionDir, 'run-old.stdout');
    const young = join(sessionDir, 'run-young.stdout');
    writeFileSync(old, 'old output', { mode: 0o600 });
    writeFileSync(young, 'young output', { mode: 0o600 });
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(old, hourAgo, hourAgo);
    await startDaemon({ stateDir, config: { spillRetentionMs: 600_000 } });
    expect(existsSync(old)).toBe(false);
    expect(existsSync(young)).toBe(true);
    console.log('spill sweep: at start-up removed the 1 h old file, kept the fresh one (spillRetentionMs=600000)');
  });

  it("removes a settled run's file once it is past retention, never the file of a run still writing it", async () => {
    const daemon = await startDaemon({ config: { spillRetentionMs: 500, maxOutputBytes: 100 } });
    const client = await daemon.session('s1');
    const held = await startHeldRun(client, 's1', 1_000);
    const settled = await client.run({ sessionId: 's1', command: 'head -c 1000 /dev/zero' });
    const settledPath = settled.stdout.spillPath!;
    expect(existsSync(settledPath)).toBe(true);
    // Each run start asks for a sweep; the settled file goes once it is older than 500 ms.
    await waitFor(
      async () => {
        await client.run({ sessionId: 's1', command: 'true' });
        return !existsSync(settledPath);
      },
      'the settled file to be swept',
      { intervalMs: 200 },
    );
    // The long run's file is older still, but open: it stayed, and its run reports it.
    const remaining = readdirSync(dirname(settledPath)).map((name) => join(dirname(settledPath), name));
    expect(remaining).toHaveLength(1);
    const long = await held.abort();
    const longPath = long.stdout.spillPath!;
    expect(long.stdout.truncated).toBe(true);
    expect(longPath).toBe(remaining[0]);
    // Settled and past retention, it goes with the next sweep.
    await waitFor(() => !existsSync(longPath), 'the long run file to be swept after it settled');
    console.log(
      'spill sweep: a settled file past spillRetentionMs=500 was removed while an older file still being written was kept until its run settled',
    );
  });
});
