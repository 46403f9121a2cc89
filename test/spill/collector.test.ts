/** The bounded collector against real files in a temp dir. */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OutputCollector } from '../../spill/collector.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function collector(
  maxBytes: number,
  maxSpillBytes = 1 << 20,
  extra: Partial<ConstructorParameters<typeof OutputCollector>[0]> = {},
) {
  dir = mkdtempSync(join(tmpdir(), 'execd-collector-'));
  return new OutputCollector({ maxBytes, maxSpillBytes, spillPath: join(dir, 'spill', 's', 'run.stdout'), ...extra });
}

describe('OutputCollector', () => {
  it('keeps small output in memory only', () => {
    const c = collector(10);
    c.write(Buffer.from('hello'));
    expect(c.finish()).toEqual({ text: 'hello', truncated: false });
    expect(existsSync(join(dir, 'spill'))).toBe(false);
  });

  it('spills the complete stream from byte 0 once it passes maxBytes', () => {
    const c = collector(4);
    for (const part of ['ab', 'cd', 'ef', 'gh']) c.write(Buffer.from(part));
    const result = c.finish();
    expect(result).toMatchObject({ text: 'efgh', truncated: true });
    expect(readFileSync(result.spillPath!, 'utf8')).toBe('abcdefgh');
    expect(statSync(result.spillPath!).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'spill', 's')).mode & 0o777).toBe(0o700);
  });

  it('discards the spill file past maxSpillBytes', () => {
    const c = collector(4, 10);
    for (let i = 0; i < 6; i++) c.write(Buffer.from('xy'));
    const result = c.finish();
    expect(result).toEqual({ text: 'xyxy', truncated: true });
    expect(existsSync(join(dir, 'spill', 's', 'run.stdout'))).toBe(false);
  });

  it('writes the file from the first byte in alwaysToFile mode', () => {
    const c = collector(100, 1000, { alwaysToFile: true });
    c.write(Buffer.from('small'));
    const result = c.finish();
    expect(result).toEqual({ text: 'small', truncated: false, spillPath: join(dir, 'spill', 's', 'run.stdout') });
    expect(readFileSync(result.spillPath!, 'utf8')).toBe('small');
  });

  it('streams whole characters even when a chunk splits one', () => {
    const texts: string[] = [];
    const c = collector(100, 1000, { onText: (text) => texts.push(text) });
    const bytes = Buffer.from('a€b');
    c.write(bytes.subarray(0, 2));
    c.write(bytes.subarray(2));
    c.finish();
    expect(texts).toEqual(['a', '€b']);
  });

  it('keeps the tail and names the cause when the spill file cannot be created, and never throws', () => {
    dir = mkdtempSync(join(tmpdir(), 'execd-collector-'));
    // The spill file's directory would have to be below a regular file: ENOTDIR at creation.
    writeFileSync(join(dir, 'blocker'), '');
    const c = new OutputCollector({
      maxBytes: 4,
      maxSpillBytes: 1 << 20,
      spillPath: join(dir, 'blocker', 's', 'run.stdout'),
    });
    for (const part of ['ab', 'cd', 'ef', 'gh']) c.write(Buffer.from(part));
    const result = c.finish();
    expect(result).toMatchObject({ text: 'efgh', truncated: true });
    expect(result.spillPath).toBeUndefined();
    expect(result.saveError).toMatch(/^output could not be saved: ENOTDIR/);
  });
});
