/**
 * The documents hold together: every relative link and anchor in README.md, PROTOCOL.md,
 * CHANGELOG.md and docs/ resolves; every configuration field and every CLI subcommand is
 * documented in docs/; nothing points at a document outside the repository.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../protocol/config.js';
import { CLI } from '../helpers/daemon.js';
import { docFiles, prose, ROOT } from './doc-files.js';

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a Markdown text defines (duplicates numbered as GitHub does). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

const DOCS = docFiles();

/** Every Markdown link target of the documents, with where it was found. */
const LINKS = DOCS.flatMap((doc) =>
  [...prose(doc.text).matchAll(/\]\(([^)\s]+)\)/g)].map((match) => ({ from: doc.path, target: match[1]! })),
);

/** The docs/ pages' text, where every field and subcommand must appear. */
const DOCS_TEXT = DOCS.filter((doc) => doc.path.startsWith('docs/'))
  .map((doc) => doc.text)
  .join('\n');

/** Subcommand names listed by a `--help` text under its `heading:` line. */
function subcommands(help: string, heading: string): string[] {
  const section = help.slice(help.indexOf(`${heading}:\n`) + heading.length + 2);
  return [...section.split('\n\n')[0]!.matchAll(/^ {2}([a-z-]+) /gm)].map((match) => match[1]!);
}

describe('the documents', () => {
  it('find their relative links and anchors', () => {
    expect(LINKS.length).toBeGreaterThan(20);
    const broken = LINKS.filter(({ target }) => !/^[a-z]+:/.test(target)).filter(({ from, target }) => {
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const path = file === '' ? join(ROOT, from) : normalize(join(ROOT, dirname(from), file));
      if (!path.startsWith(ROOT) || !existsSync(path)) return true;
      if (anchor === undefined) return false;
      return !statSync(path).isFile() || !anchors(readFileSync(path, 'utf8')).has(anchor);
    });
    expect(broken).toEqual([]);
  });

  it('refer to no document outside the repository', () => {
    const outside = DOCS.filter((doc) => /\bSPEC\b|§/.test(doc.text)).map((doc) => doc.path);
    expect(outside).toEqual([]);
  });

  it('name every configuration field in docs/', () => {
    const fields = Object.keys(DEFAULT_CONFIG);
    expect(fields.length).toBeGreaterThan(20);
    expect(fields.filter((field) => !DOCS_TEXT.includes(`\`${field}\``))).toEqual([]);
  });

  it('name every CLI subcommand in docs/', () => {
    const help = (args: string[]) => execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
    const top = subcommands(help(['--help']), 'Commands');
    const term = subcommands(help(['term', '--help']), 'Subcommands').map((name) => `term ${name}`);
    expect(top.length).toBeGreaterThan(10);
    expect(term.length).toBeGreaterThan(3);
    expect([...top, ...term].filter((name) => !DOCS_TEXT.includes(`execd ${name}`))).toEqual([]);
  });
});
