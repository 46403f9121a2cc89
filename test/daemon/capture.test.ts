/** Output capture and spill files through a real daemon (SPEC §1.5). */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startDaemon } from '../helpers/daemon.js';

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

describe('output capture', () => {
  it('keeps the tail in memory and the complete stream in an owner-only spill file', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000 } });
    const client = await daemon.session('s1');
    // 5000 numbered lines: about 29 KB, far past the 1000-byte window.
    const result = await client.run({ sessionId: 's1', command: 'seq 1 5000' });
    const full = Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join('');
    expect(result.stdout.truncated).toBe(true);
    expect(Buffer.byteLength(result.stdout.text)).toBe(1000);
    expect(full.endsWith(result.stdout.text)).toBe(true);
    const spill = result.stdout.spillPath!;
    expect(spill.startsWith(join(daemon.stateDir, 'spill', 's1'))).toBe(true);
    expect(readFileSync(spill, 'utf8')).toBe(full);
    expect(statSync(spill).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(spill)).mode & 0o777).toBe(0o700);
    expect(result.stderr).toEqual({ text: '', truncated: false });
  });

  it('applies stdoutMaxBytes to stdout only; stderr uses maxOutputBytes', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 100 } });
    const client = await daemon.session('s1');
    const result = await client.run({
      sessionId: 's1',
      command: 'head -c 50 /dev/zero | tr "\\0" a; head -c 150 /dev/zero | tr "\\0" b >&2',
      stdoutMaxBytes: 10,
    });
    expect(result.stdout).toMatchObject({ text: 'a'.repeat(10), truncated: true });
    expect(result.stderr).toMatchObject({ text: 'b'.repeat(100), truncated: true });
    expect(readFileSync(result.stdout.spillPath!, 'utf8')).toBe('a'.repeat(50));
    expect(readFileSync(result.stderr.spillPath!, 'utf8')).toBe('b'.repeat(150));
  });

  it('deletes the spill file past maxSpillBytes and still reports the tail', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000, maxSpillBytes: 100_000 } });
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'head -c 300000 /dev/zero | tr "\\0" x' });
    expect(result.stdout.truncated).toBe(true);
    expect(result.stdout.text).toBe('x'.repeat(1000));
    expect(result.stdout).not.toHaveProperty('spillPath');
    const dir = join(daemon.stateDir, 'spill', 's1');
    const left = existsSync(dir) ? readdirSync(dir) : [];
    expect(left).toEqual([]);
  });

  it('never starts the tail inside a multi-byte character', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 10 } });
    const client = await daemon.session('s1');
    // "é" is 2 bytes, "€" 3: a 10-byte window over "aé€€€" cuts inside a character.
    const result = await client.run({
      sessionId: 's1',
      command: "printf 'a\\xc3\\xa9\\xe2\\x82\\xac\\xe2\\x82\\xac\\xe2\\x82\\xac'",
    });
    expect(result.stdout.truncated).toBe(true);
    expect(result.stdout.text).toBe('€€€');
    expect(result.stdout.text).not.toContain('\uFFFD');
    expect(readFileSync(result.stdout.spillPath!, 'utf8')).toBe('aé€€€');
  });

  it('decodes binary output as U+FFFD without harm, and the spill keeps the exact bytes', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 2000 } });
    const client = await daemon.session('s1');
    const result = await client.run({
      sessionId: 's1',
      command: 'f=$(mktemp); head -c 65536 /dev/urandom >"$f"; cat "$f" >&2; sha256sum <"$f" >&2; rm "$f"',
    });
    expect(result.exitCode).toBe(0);
    expect(result.stderr.truncated).toBe(true);
    const bytes = readFileSync(result.stderr.spillPath!);
    expect(bytes.length).toBe(65536 + 68); // "<64 hex>  -\n"
    const digest = bytes.subarray(65536).toString('utf8').slice(0, 64);
    expect(sha(bytes.subarray(0, 65536))).toBe(digest);
    const again = await client.run({ sessionId: 's1', command: 'echo still fine' });
    expect(again.stdout.text).toBe('still fine\n');
  });

  it('streams $/progress chunks that concatenate to exactly the stdout', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const chunks: Record<'stdout' | 'stderr', string[]> = { stdout: [], stderr: [] };
    const result = await client.run(
      { sessionId: 's1', command: 'for i in $(seq 1 40); do echo "line $i"; echo "err $i" >&2; sleep 0.005; done' },
      { onOutput: ({ stream, text }) => chunks[stream].push(text) },
    );
    expect(chunks.stdout.length).toBeGreaterThan(1);
    expect(chunks.stdout.join('')).toBe(result.stdout.text);
    expect(chunks.stderr.join('')).toBe(result.stderr.text);
    expect(result.stdout.text).toBe(Array.from({ length: 40 }, (_, i) => `line ${i + 1}\n`).join(''));
  });
});
