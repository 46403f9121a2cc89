/**
 * The CLI never loses output (SPEC §10): `read --follow` and `peek` read the job's log files by
 * offset; `read` keeps stdout and stderr apart unless `--merged`; `clean` releases ended jobs.
 */
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobSnapshot } from '../../protocol/types.js';
import { cliWorld } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const LINES = 2_000_000;

/** `1\n2\n…\nN\n`, as `seq 1 N` prints it. */
function seqText(count: number): string {
  const lines: string[] = [];
  for (let i = 1; i <= count; i++) lines.push(String(i));
  return `${lines.join('\n')}\n`;
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** Checks `text` is exactly the lines 1..count in order, and says where it first differs. */
function expectSeq(text: string, count: number, what: string): void {
  const expected = seqText(count);
  if (text === expected) return;
  const lines = text.split('\n');
  const firstBad = lines.findIndex((line, i) => i < count && line !== String(i + 1));
  expect({ lines: lines.length - 1, firstBad, sha: sha(text) }, what).toEqual({
    lines: count,
    firstBad: -1,
    sha: sha(expected),
  });
}

describe('whole output through the CLI', { timeout: 300_000 }, () => {
  it('read --follow prints exactly 2,000,000 lines in order, from a job that writes as fast as it can and from one that pauses', async () => {
    const world = cliWorld();
    // The fast job prints its 2,000,000 lines only once the follower is following (it printed "0").
    const gate = join(world.dir, 'gate');
    const fast = (
      await world.run(['start', '--', `echo 0; until [ -e ${gate} ]; do sleep 0.02; done; seq 1 ${LINES}`])
    ).stdout.trim();
    const follower = world.spawn(['read', '--follow', fast]);
    await waitFor(() => follower.stdout() === '0\n', 'the follower to print the first line', { timeoutMs: 60_000 });
    writeFileSync(gate, '');
    const fastFollow = await follower.done;
    expect(fastFollow.code).toBe(0);
    expect(fastFollow.stderr).toBe('');
    expect(fastFollow.stdout.startsWith('0\n')).toBe(true);
    expectSeq(fastFollow.stdout.slice(2), LINES, 'fast job');

    // 20 chunks of 100,000 lines, 0.2 s apart: the follower catches up and waits many times.
    const paused = (
      await world.run([
        'start',
        '--',
        `for c in $(seq 0 19); do seq $((c * 100000 + 1)) $((c * 100000 + 100000)); sleep 0.2; done`,
      ])
    ).stdout.trim();
    const started = Date.now();
    const pausedFollow = await world.run(['read', '--follow', paused]);
    console.log(`read --follow of the pausing job: ${pausedFollow.stdout.length} bytes in ${Date.now() - started} ms`);
    expect(pausedFollow.code).toBe(0);
    expectSeq(pausedFollow.stdout, LINES, 'pausing job');

    // peek of the settled job prints every line too, and consumes nothing.
    const peeked = await world.run(['peek', fast]);
    expect(peeked.code).toBe(0);
    expectSeq(peeked.stdout.slice(2), LINES, 'peek');
    // The follow consumed: a plain read has nothing left.
    expect(await world.run(['read', fast])).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  it('read prints stdout to stdout and stderr to stderr; --merged prints the model view', async () => {
    const world = cliWorld();
    const gate = join(world.dir, 'gate');
    const job = (
      await world.run([
        'start',
        '--',
        `echo out1; echo err1 >&2; until [ -e ${gate} ]; do sleep 0.02; done; echo out2; echo err2 >&2`,
      ])
    ).stdout.trim();
    await waitFor(async () => (await world.run(['peek', job])).stderr === 'err1\n', 'the first lines', {
      timeoutMs: 60_000,
    });
    expect(await world.run(['read', job])).toMatchObject({ code: 0, stdout: 'out1\n', stderr: 'err1\n' });
    writeFileSync(gate, '');
    await world.run(['wait', job]);
    expect(await world.run(['read', '--merged', job])).toMatchObject({
      code: 0,
      stdout: 'out2\n[stderr]\nerr2\n',
      stderr: '',
    });
    // --follow --merged: the model's view, from where the reader stands (nothing new now), then the marker.
    expect(await world.run(['read', '--follow', '--merged', job])).toMatchObject({ code: 0, stdout: '' });
  });

  it('clean releases every ended job of the session (or of all) and says how many and how many bytes', async () => {
    const world = cliWorld();
    const a = (await world.run(['start', '--', 'head -c 1000 /dev/zero'])).stdout.trim();
    const b = (await world.run(['start', '--', 'echo oops >&2; exit 2'])).stdout.trim();
    const running = (await world.run(['start', '--', 'sleep 300'])).stdout.trim();
    const other = (await world.run(['start', '--session', 'other', '--', 'echo x'])).stdout.trim();
    await world.run(['wait', a]);
    await world.run(['wait', b]);
    await world.run(['wait', '--session', 'other', other]);
    const before = JSON.parse((await world.run(['jobs', '--json'])).stdout) as JobSnapshot[];
    const logs = before.filter((job) => job.id !== running).flatMap((job) => [job.stdoutPath!, job.stderrPath!]);
    expect(logs.every((path) => existsSync(path))).toBe(true);

    expect(await world.run(['clean'])).toMatchObject({
      code: 0,
      stdout: 'released 2 jobs, freed 1005 bytes\n',
    });
    expect(logs.some((path) => existsSync(path))).toBe(false);
    const after = JSON.parse((await world.run(['jobs', '--json'])).stdout) as JobSnapshot[];
    expect(after.map((job) => job.id)).toEqual([running]);
    // Nothing left to clean here; --all reaches the other session's ended job.
    expect((await world.run(['clean'])).stdout).toBe('released 0 jobs, freed 0 bytes\n');
    expect(JSON.parse((await world.run(['clean', '--all', '--json'])).stdout)).toEqual({ released: 1, bytes: 2 });
    expect((await world.run(['jobs', '--all'])).stdout).not.toContain(other);
    await world.run(['kill', running]);
  });
});
