/** The private-directory check depends on the platform's facts: mode bits mean nothing on Windows. */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkPrivateDir } from '../../shared/state-dir.js';
import { platformFacts } from '../../protocol/platform.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function openDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-state-'));
  dirs.push(dir);
  chmodSync(dir, 0o755);
  return dir;
}

describe('checkPrivateDir by platform', () => {
  it('refuses a group- or world-accessible dir where mode bits count', () => {
    const dir = openDir();
    expect(checkPrivateDir(dir, platformFacts('linux'))).toBe(
      `${dir} is accessible to group or others (mode 0755); it must be 0700`,
    );
  });

  it('does not judge Windows directories by mode bits (they always read 0666 there)', () => {
    expect(checkPrivateDir(openDir(), platformFacts('win32'))).toBeUndefined();
  });
});
