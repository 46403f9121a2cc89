/**
 * The shipped sources (their comments become the `.d.ts` files' JSDoc) cite only documents the
 * package ships: a page of docs/ or PROTOCOL.md, never the specification execd was built from.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './doc-files.js';

/** The source trees a package or a daemon ships. */
const SHIPPED = ['client', 'protocol', 'shared', 'spill', 'daemon'];

/** Every TypeScript file under `dir`, relative to the root. */
function sourcesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => relative(ROOT, join(ROOT, dir, name)));
}

const SOURCES = SHIPPED.flatMap(sourcesUnder).map((path) => ({
  path,
  text: readFileSync(join(ROOT, path), 'utf8'),
}));

describe('the shipped sources', () => {
  it('cite no specification section', () => {
    expect(SOURCES.length).toBeGreaterThan(100);
    const citing = SOURCES.filter((source) => /\bSPEC\b|§/.test(source.text)).map((source) => source.path);
    expect(citing).toEqual([]);
  });

  it('cite only documents that exist', () => {
    const missing = SOURCES.flatMap((source) =>
      [...source.text.matchAll(/\bdocs\/[a-z-]+\.md\b/g)]
        .map((match) => match[0])
        .filter((doc) => !existsSync(join(ROOT, doc)))
        .map((doc) => `${source.path}: ${doc}`),
    );
    expect(missing).toEqual([]);
  });
});
