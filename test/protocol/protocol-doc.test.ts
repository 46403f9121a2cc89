/** PROTOCOL.md, the document a client in another language reads, covers every method and notification. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../protocol/errors.js';
import { ALL_REQUESTS } from '../../protocol/methods.js';
import { NOTIFICATION_SCHEMAS } from '../../protocol/results.js';

const DOC = readFileSync(join(import.meta.dirname, '..', '..', 'PROTOCOL.md'), 'utf8');

describe('PROTOCOL.md', () => {
  it('has a section with an example exchange for every method', () => {
    const missing = ALL_REQUESTS.map((decl) => decl.method).filter((method) => {
      // Its own heading, or one it shares with the methods it goes with (`fs/upload/begin`, …).
      const start = DOC.search(new RegExp(`^### .*\`${method.replaceAll('/', '\\/')}\``, 'm'));
      if (start === -1) return true;
      const end = DOC.indexOf('\n### ', start + 1);
      return !DOC.slice(start, end === -1 ? undefined : end).includes(`"method":"${method}"`);
    });
    expect(missing).toEqual([]);
  });

  it('names every notification and every application error code', () => {
    for (const method of Object.keys(NOTIFICATION_SCHEMAS)) expect(DOC).toContain(`### \`${method}\``);
    for (const [name, code] of Object.entries(ErrorCodes)) expect(DOC).toContain(`| ${code} | \`${name}\` |`);
  });
});
