/**
 * The whole output through the protocol (SPEC §10): `output/read` pages every spill and log file
 * reported to a session — and nothing else — and `job/peek` reads old offsets from the log file.
 */
import { createHash } from 'node:crypto';
import { linkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError, type ExecdClient } from '../../client/connection.js';
import { JobClean, JobPeek, JobRelease, OutputRead, ShellRun, ShellStart } from '../../protocol/methods.js';
import type { OutputReadResult } from '../../protocol/types.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';

/** The error a call rejects with: its name and message. */
async function failureOf(promise: Promise<unknown>): Promise<{ name: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ExecdRpcError) return { name: error.errorName, message: error.message };
    throw error;
  }
  return { name: 'no error', message: '' };
}

/** Pages a file from offset 0 to its end; checks that each page starts where the last one ended. */
async function pageAll(client: ExecdClient, sessionId: string, path: string, maxBytes?: number) {
  const parts: Buffer[] = [];
  const pages: OutputReadResult[] = [];
  let offset = 0;
  for (;;) {
    const page = await client.call(OutputRead, { sessionId, path, offset, maxBytes });
    expect(page.offset).toBe(offset);
    const bytes = Buffer.from(page.text, 'utf8');
    // Every byte exactly once: the text is exactly the bytes between the two offsets.
    expect(bytes.length).toBe(page.nextOffset - page.offset);
    parts.push(bytes);
    pages.push(page);
    offset = page.nextOffset;
    if (page.eof) return { bytes: Buffer.concat(parts), pages };
    expect(page.nextOffset).toBeGreaterThan(page.offset);
  }
}

const sha = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** `n €\n` for n in [0, count): multi-byte characters everywhere, so page cuts fall inside some. */
const EURO_LINES = (count: number) =>
  `awk 'BEGIN { for (i = 0; i < ${count}; i++) printf "%d \\342\\202\\254\\n", i }'`;
function euroLines(count: number): string {
  let text = '';
  for (let i = 0; i < count; i++) text += `${i} €\n`;
  return text;
}

describe('output/read', { timeout: 180_000 }, () => {
  it('pages a 64 MiB job log in 1 MiB pages: every byte exactly once, cut on character boundaries', async () => {
    const daemon = await startDaemon({ config: { maxSpillBytes: 80 * 1024 * 1024 } });
    const client = await daemon.session('s1');
    // Exactly 64 MiB: "ab", then lines "n €\n" (the cut falls after a whole character).
    const size = 64 * 1024 * 1024;
    const lines = 5_700_000;
    const command = `{ printf ab; ${EURO_LINES(lines)}; } | head -c ${size}`;
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command });
    const job = await waitJob(client, 's1', jobId);
    expect(job.status).toBe('completed');
    expect(job.stdoutPath).toBe(join(daemon.stateDir, 'spill', 's1', `${jobId}.stdout`));
    expect(job.stderrPath).toBe(join(daemon.stateDir, 'spill', 's1', `${jobId}.stderr`));
    const started = Date.now();
    const { bytes, pages } = await pageAll(client, 's1', job.stdoutPath!, 1024 * 1024);
    const expected = Buffer.from(`ab${euroLines(lines)}`).subarray(0, size);
    console.log(
      `output/read: ${bytes.length} bytes in ${pages.length} pages of at most 1 MiB, ${Date.now() - started} ms`,
    );
    expect(bytes.length).toBe(job.stdoutBytes);
    expect(bytes.length).toBe(size);
    expect(sha(bytes)).toBe(sha(expected));
    expect(pages.every((page) => page.nextOffset - page.offset <= 1024 * 1024)).toBe(true);
    // Some page boundaries fell inside a "€" and were moved back to the character's start.
    expect(pages.some((page) => !page.eof && page.nextOffset - page.offset < 1024 * 1024)).toBe(true);
    expect(pages.at(-1)).toMatchObject({ eof: true, size: bytes.length, nextOffset: bytes.length });
  });

  it("pages a foreground run's spill file and a running job's log, and never splits a character", async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const run = await client.call(ShellRun, { sessionId: 's1', command: EURO_LINES(3_000), stdoutMaxBytes: 1000 });
    expect(run.stdout.spillPath).toBeDefined();
    const whole = await pageAll(client, 's1', run.stdout.spillPath!, 5);
    expect(whole.bytes.toString('utf8')).toBe(euroLines(3_000));
    // A page of 5 bytes starting at "0 €\n1 €" ends before the "€" it would cut.
    expect(
      await client.call(OutputRead, { sessionId: 's1', path: run.stdout.spillPath!, offset: 0, maxBytes: 5 }),
    ).toMatchObject({ text: '0 €', offset: 0, nextOffset: 5, eof: false });
    expect(
      await client.call(OutputRead, { sessionId: 's1', path: run.stdout.spillPath!, offset: 6, maxBytes: 4 }),
    ).toMatchObject({ text: '1 ', offset: 6, nextOffset: 8 });
    // An offset inside a character starts the page at the next character.
    expect(
      await client.call(OutputRead, { sessionId: 's1', path: run.stdout.spillPath!, offset: 3, maxBytes: 4 }),
    ).toMatchObject({ text: '\n1', offset: 5, nextOffset: 7 });
    // A running job's log: readable while it grows; eof says "the end as of now".
    const gate = join(daemon.dir, 'gate');
    const { jobId } = await client.call(ShellStart, {
      sessionId: 's1',
      command: `printf 'first\\n'; until [ -e ${gate} ]; do sleep 0.02; done; printf 'second\\n'`,
    });
    const path = join(daemon.stateDir, 'spill', 's1', `${jobId}.stdout`);
    const first = await waitFor(async () => {
      const page = await client.call(OutputRead, { sessionId: 's1', path });
      return page.text === 'first\n' ? page : undefined;
    }, 'the first line in the log');
    expect(first).toMatchObject({ eof: true, size: 6, nextOffset: 6 });
    writeFileSync(gate, '');
    await waitJob(client, 's1', jobId);
    expect(await client.call(OutputRead, { sessionId: 's1', path, offset: first.nextOffset })).toEqual({
      text: 'second\n',
      offset: 6,
      nextOffset: 13,
      eof: true,
      size: 13,
    });
  });

  it("refuses /etc/passwd, another session's file, `..` paths and a symlink or hard link swapped in, reading nothing", async () => {
    const daemon = await startDaemon();
    const s1 = await daemon.session('s1');
    const s2 = await daemon.session('s2');
    const big = 'head -c 100000 /dev/zero | tr "\\0" x';
    const mine = (await s1.call(ShellRun, { sessionId: 's1', command: big })).stdout.spillPath!;
    const theirs = (await s2.call(ShellRun, { sessionId: 's2', command: big })).stdout.spillPath!;
    expect(mine).toBeDefined();
    expect(theirs).toBeDefined();
    expect((await s1.call(OutputRead, { sessionId: 's1', path: mine, maxBytes: 10 })).text).toBe('xxxxxxxxxx');

    const theirJob = await s2.call(ShellStart, { sessionId: 's2', command: 'echo theirs' });
    const theirLog = (await waitJob(s2, 's2', theirJob.jobId)).stdoutPath!;
    const refusals: Record<string, string> = {
      '/etc/passwd': '/etc/passwd',
      "another session's job log": theirLog,
      "another session's spill file": theirs,
      '.. out of the session': join(dirname(mine), '..', 's2', theirs.split('/').at(-1)!),
      '.. back into the session': `${dirname(mine)}/../s1/${mine.split('/').at(-1)}`,
      '. in the path': `${dirname(mine)}/./${mine.split('/').at(-1)}`,
      'the session directory': dirname(mine),
      'a file of the session never reported': join(dirname(mine), 'run-999999.stdout'),
    };
    for (const [what, path] of Object.entries(refusals)) {
      const failure = await failureOf(s1.call(OutputRead, { sessionId: 's1', path }));
      expect(failure.name, what).toBe('FORBIDDEN');
      expect(failure.message, what).not.toContain('root:');
    }
    // s2 reads its own file; s1 may not even name session s2.
    expect((await s2.call(OutputRead, { sessionId: 's2', path: theirs, maxBytes: 4 })).text).toBe('xxxx');
    expect((await failureOf(s1.call(OutputRead, { sessionId: 's2', path: theirs }))).name).toBe('SESSION_NOT_FOUND');
    // A relative path is refused by the schema.
    const relative = await failureOf(s1.call(OutputRead, { sessionId: 's1', path: 'spill/s1/x' }));
    expect(relative).toMatchObject({ name: 'INVALID_PARAMS', message: 'path must be an absolute path' });
    const tooBig = await failureOf(s1.call(OutputRead, { sessionId: 's1', path: mine, maxBytes: 1024 * 1024 + 1 }));
    expect(tooBig).toMatchObject({
      name: 'INVALID_PARAMS',
      message: 'maxBytes must be a positive integer up to 1048576',
    });

    // A symlink swapped in place of the reported file: refused, nothing read.
    const moved = `${mine}.moved`;
    renameSync(mine, moved);
    symlinkSync('/etc/passwd', mine);
    const viaSymlink = await failureOf(s1.call(OutputRead, { sessionId: 's1', path: mine }));
    expect(viaSymlink.name).toBe('FORBIDDEN');
    expect(viaSymlink.message).toContain('symbolic link');
    // A hard link to another file swapped in: refused as well.
    rmSync(mine);
    const secret = join(daemon.dir, 'secret');
    writeFileSync(secret, 'secret\n');
    linkSync(secret, mine);
    const viaLink = await failureOf(s1.call(OutputRead, { sessionId: 's1', path: mine }));
    expect(viaLink.name).toBe('FORBIDDEN');
    expect(viaLink.message).not.toContain('secret\n');
    // The session directory itself swapped for a symlink: refused.
    rmSync(mine);
    renameSync(moved, mine);
    const sessionDir = dirname(mine);
    renameSync(sessionDir, `${sessionDir}.real`);
    symlinkSync(`${sessionDir}.real`, sessionDir);
    expect((await failureOf(s1.call(OutputRead, { sessionId: 's1', path: mine }))).name).toBe('FORBIDDEN');
    rmSync(sessionDir);
    renameSync(`${sessionDir}.real`, sessionDir);
    expect((await s1.call(OutputRead, { sessionId: 's1', path: mine, maxBytes: 4 })).text).toBe('xxxx');
  });

  it('says clearly when a reported file was removed: by the retention sweep, job/release or job/clean', async () => {
    const daemon = await startDaemon({ config: { spillRetentionMs: 1 } });
    const client = await daemon.session('s1');
    const run = await client.call(ShellRun, { sessionId: 's1', command: 'head -c 100000 /dev/zero' });
    const path = run.stdout.spillPath!;
    // The sweep runs about a second after the file closed and removes it (older than 1 ms).
    const removed = await waitFor(async () => {
      const failure = await failureOf(client.call(OutputRead, { sessionId: 's1', path }));
      return failure.name === 'OUTPUT_REMOVED' ? failure : undefined;
    }, 'the sweep to remove the spill file');
    expect(removed.message).toBe(
      `output file ${path} no longer exists: it was removed by the retention sweep, job/release, job/clean or session/close, or deleted when it passed maxSpillBytes`,
    );

    const other = await startDaemon();
    const c2 = await other.session('s1');
    for (const method of ['release', 'clean'] as const) {
      const { jobId } = await c2.call(ShellStart, { sessionId: 's1', command: 'echo hi' });
      const job = await waitJob(c2, 's1', jobId);
      expect((await c2.call(OutputRead, { sessionId: 's1', path: job.stdoutPath! })).text).toBe('hi\n');
      if (method === 'release') await c2.call(JobRelease, { sessionId: 's1', jobId });
      else expect(await c2.call(JobClean, { sessionId: 's1' })).toEqual({ released: 1, bytes: 3 });
      expect((await failureOf(c2.call(OutputRead, { sessionId: 's1', path: job.stdoutPath! }))).name, method).toBe(
        'OUTPUT_REMOVED',
      );
    }
  });
});

describe('output/read after a restart', { timeout: 120_000 }, () => {
  it("still pages a job's log: the journal knows the job and its session", async () => {
    const first = await startDaemon();
    const c1 = await first.session('s1');
    const { jobId } = await c1.call(ShellStart, { sessionId: 's1', command: 'seq 1 1000' });
    const job = await waitJob(c1, 's1', jobId);
    expect(await first.stop()).toBe(0);
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: join(first.dir, 'run2', 'execd.sock') });
    const c2 = await second.session('s1');
    const page = await c2.call(OutputRead, { sessionId: 's1', path: job.stdoutPath! });
    expect(page).toMatchObject({ offset: 0, eof: true, size: job.stdoutBytes });
    expect(page.text.split('\n')).toHaveLength(1001);
    // Another session of the new daemon still may not read it.
    const c3 = await second.session('s2');
    expect((await failureOf(c3.call(OutputRead, { sessionId: 's2', path: job.stdoutPath! }))).name).toBe('FORBIDDEN');
  });

  it("still pages a foreground run's spill file: an earlier daemon left it in the session's directory", async () => {
    const first = await startDaemon({ config: { maxOutputBytes: 1000 } });
    const c1 = await first.session('s1');
    const run = await c1.call(ShellRun, { sessionId: 's1', command: 'seq 1 2000' });
    const spillPath = run.stdout.spillPath!;
    expect(spillPath).toBeDefined();
    expect(await first.stop()).toBe(0);
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: join(first.dir, 'run2', 'execd.sock') });
    const c2 = await second.session('s1');
    const page = await c2.call(OutputRead, { sessionId: 's1', path: spillPath });
    expect(page.text).toBe(Array.from({ length: 2000 }, (_, i) => `${i + 1}\n`).join(''));
    expect(page).toMatchObject({ offset: 0, eof: true });
    // Still only the session's own: another session may not read it, nor s1 a file made after the start.
    const c3 = await second.session('s2');
    expect((await failureOf(c3.call(OutputRead, { sessionId: 's2', path: spillPath }))).name).toBe('FORBIDDEN');
    const planted = join(dirname(spillPath), 'run-999998.stdout');
    writeFileSync(planted, 'planted\n');
    expect((await failureOf(c2.call(OutputRead, { sessionId: 's1', path: planted }))).name).toBe('FORBIDDEN');
  });
});

describe('job/peek from the log file', { timeout: 120_000 }, () => {
  it('reads an offset older than the memory window from the log, lossless; lossy only past maxSpillBytes', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000, maxSpillBytes: 150_000 } });
    const client = await daemon.session('s1');
    // 100,000 bytes of stdout and of stderr: far past the 1,000-byte window, within the cap.
    const command = `${EURO_LINES(12_000)} | head -c 100000; ${EURO_LINES(12_000)} | head -c 100000 >&2`;
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command });
    await waitJob(client, 's1', jobId);
    const expected = Buffer.from(euroLines(12_000)).subarray(0, 100_000);
    const peeked = await client.call(JobPeek, {
      sessionId: 's1',
      jobId,
      stdoutOffset: 0,
      stderrOffset: 10,
      maxBytes: 50_000,
    });
    expect(peeked.stdout.lossy).toBe(false);
    expect(peeked.stdout.text).toBe(expected.subarray(0, peeked.stdout.nextOffset).toString('utf8'));
    expect(peeked.stdout.nextOffset).toBeGreaterThan(49_990);
    expect(peeked.stderr).toMatchObject({ lossy: false });
    expect(peeked.stderr.text).toBe(expected.subarray(10, peeked.stderr.nextOffset).toString('utf8'));
    // Without maxBytes, a page is the window's size.
    const small = await client.call(JobPeek, { sessionId: 's1', jobId, stdoutOffset: 2_000 });
    expect(small.stdout.lossy).toBe(false);
    expect(small.stdout.nextOffset - 2_000).toBeLessThanOrEqual(1000);
    expect(small.stdout.nextOffset - 2_000).toBeGreaterThan(990);

    // Past maxSpillBytes the log is deleted: only the window remains, and an old offset is lossy.
    const huge = await client.call(ShellStart, { sessionId: 's1', command: 'head -c 200000 /dev/zero | tr "\\0" y' });
    const job = await waitJob(client, 's1', huge.jobId);
    expect(job.stdoutPath).toBeUndefined();
    const lost = await client.call(JobPeek, { sessionId: 's1', jobId: huge.jobId, stdoutOffset: 0 });
    expect(lost.stdout).toMatchObject({ lossy: true, nextOffset: 200_000 });
    expect(lost.stdout.text).toBe('y'.repeat(1000));
  });
});
