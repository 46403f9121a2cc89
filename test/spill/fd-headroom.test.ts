/**
 * Descriptor headroom (spill/fd-headroom.ts): the soft RLIMIT_NOFILE parsed from /proc, and the
 * answer of a process with a lowered limit, exactly at its free count and with none free at all.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { softFileLimit } from '../../spill/fd-headroom.js';

const MODULE = join(import.meta.dirname, '..', '..', 'dist', 'spill', 'fd-headroom.js');

/** Runs `script` (an ES module that may import `mod`) in a node with `ulimit -n limit`; its stdout. */
function underLimit(limit: number, script: string): string {
  const code = `const mod = await import(${JSON.stringify(MODULE)});\n${script}`;
  return execFileSync(
    'bash',
    ['-c', `ulimit -n ${limit} && exec "$0" --input-type=module -e "$1"`, process.execPath, code],
    {
      encoding: 'utf8',
    },
  );
}

describe('descriptor headroom', () => {
  it('reads the soft limit of open files from a limits text', () => {
    const text =
      'Limit                     Soft Limit           Hard Limit           Units     \n' +
      'Max processes             63556                63556                processes \n' +
      'Max open files            35                   1048576              files     \n';
    expect(softFileLimit(text)).toBe(35);
    expect(softFileLimit(text.replace(' 35 ', ' unlimited '))).toBeUndefined();
    expect(softFileLimit('Max processes 10\n')).toBeUndefined();
  });

  it('answers yes up to the free descriptors and no past them, and no when none is free', () => {
    const out = underLimit(
      64,
      `import { readdirSync, openSync } from 'node:fs';
       const free = 64 - (readdirSync('/proc/self/fd').length - 1);
       const atFree = mod.hasSpareDescriptors(free);
       const pastFree = mod.hasSpareDescriptors(free + 1);
       try { for (;;) openSync('/dev/null', 'r'); } catch (error) { if (error.code !== 'EMFILE') throw error; }
       console.log(JSON.stringify({ free, atFree, pastFree, exhausted: mod.hasSpareDescriptors(1) }));`,
    );
    const answer = JSON.parse(out) as { free: number; atFree: boolean; pastFree: boolean; exhausted: boolean };
    expect(answer).toMatchObject({ atFree: true, pastFree: false, exhausted: false });
    console.log(
      `fd-headroom: RLIMIT_NOFILE 64, ${answer.free} free in a fresh node; answered ${JSON.stringify(answer)}`,
    );
  });
});
