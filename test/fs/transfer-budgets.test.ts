/**
 * Transfers and watches under per-session budgets: a session that opens every transfer slot it
 * may and walks away holds only `maxFsTransfersPerSession` of `maxFsTransfers` (another session's
 * uploads keep a p99 under 500 ms), an idle transfer is ended after `fsTransferIdleMs` (temp file
 * removed, slot freed), and bursts of begins and watches cannot overshoot their limits (the slot is
 * counted before the first await).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsUploadBegin, FsUploadChunk, FsWatch } from '../../protocol/fs.js';
import { SessionOpen } from '../../protocol/methods.js';
import { rejection } from '../helpers/rejection.js';
import { waitFor } from '../helpers/wait.js';
import { fsFixture } from './helpers.js';

/** The p-th percentile of `samples` (ms). */
function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('transfer and watch budgets', { timeout: 90_000 }, () => {
  it('a session holding all its transfer slots leaves the others theirs, p99 < 500 ms', async () => {
    const { client, workspace, daemon } = await fsFixture('workspace-write', { sessionId: 'hog' });
    // The hog opens uploads until refused and never sends a byte.
    let opened = 0;
    for (;;) {
      const begun = await client
        .call(FsUploadBegin, { sessionId: 'hog', path: `hog-${opened}` })
        .catch((e: Error) => e);
      if (begun instanceof Error) {
        expect(begun.message).toContain('maxFsTransfersPerSession limit reached (8)');
        break;
      }
      opened += 1;
    }
    expect(opened).toBe(8);
    const other = await daemon.connect();
    await other.call(SessionOpen, {
      sessionId: 'b',
      cwd: workspace,
      sandbox: { mode: 'workspace-write', workspaceRoot: workspace },
    });
    const local = join(daemon.dir, 'small');
    writeFileSync(local, 'x'.repeat(10_000));
    const samples: number[] = [];
    for (let i = 0; i < 30; i++) {
      const started = performance.now();
      await other.fs.upload(local, join(workspace, `b-${i}`), { sessionId: 'b' });
      samples.push(performance.now() - started);
    }
    const p99 = percentile(samples, 99);
    console.log(
      `another session's 10 kB upload while one session holds 8 idle uploads: p50 ${percentile(samples, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    );
    expect(p99).toBeLessThan(500);
  });

  it('an idle upload is ended after fsTransferIdleMs: temp file gone, slot free', async () => {
    const { client, workspace, sessionId } = await fsFixture('workspace-write', {
      config: { fsTransferIdleMs: 400, maxFsTransfersPerSession: 1 },
    });
    const { uploadId } = await client.call(FsUploadBegin, { sessionId, path: 'slow' });
    expect(readdirSync(workspace).length).toBe(1);
    const refused = await rejection(client.call(FsUploadBegin, { sessionId, path: 'second' }));
    expect(refused.message).toContain('maxFsTransfersPerSession');
    await waitFor(() => readdirSync(workspace).length === 0, 'the idle upload to be ended', { timeoutMs: 5_000 });
    const late = await rejection(client.call(FsUploadChunk, { sessionId, uploadId, offset: 0, data: 'eA==' }));
    expect(late.errorName).toBe('FS_NOT_FOUND');
    await client.call(FsUploadBegin, { sessionId, path: 'second' });
  });

  it('bursts cannot overshoot: 40 begins against maxFsTransfers 16, 40 watches against maxWatchesPerSession 32', async () => {
    const { client, sessionId } = await fsFixture('workspace-write', { config: { maxFsTransfersPerSession: 64 } });
    const begins = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) => client.call(FsUploadBegin, { sessionId, path: `burst-${i}` })),
    );
    expect(begins.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(16);
    const watches = await Promise.allSettled(
      Array.from({ length: 40 }, () => client.call(FsWatch, { sessionId, path: '.' })),
    );
    const reasons = watches.flatMap((outcome) => (outcome.status === 'rejected' ? [String(outcome.reason)] : []));
    expect(new Set(reasons)).toEqual(new Set(['ExecdRpcError: maxWatchesPerSession limit reached (32)']));
    expect(watches.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(32);
  });
});
