/** The reader-facing documents of the repository: README.md, PROTOCOL.md, CHANGELOG.md and every page of docs/. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository root. */
export const ROOT = join(import.meta.dirname, '..', '..');

/** One document: its path relative to the root and its text. */
export interface DocFile {
  path: string;
  text: string;
}

/** Every document a reader may open, read from disk. */
export function docFiles(): DocFile[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', 'PROTOCOL.md', 'CHANGELOG.md', ...pages].map((path) => ({
    path,
    text: readFileSync(join(ROOT, path), 'utf8'),
  }));
}

/** A fenced code block: its info string (`ts runnable`), body and the line it opens on. */
export interface CodeBlock {
  info: string;
  body: string;
  line: number;
}

/** The fenced code blocks of a Markdown text, in order. */
export function codeBlocks(text: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    blocks.push({ info: open[1]!.trim(), body: body.join('\n'), line: start + 1 });
  }
  return blocks;
}

/** The text outside fenced code blocks (links inside code are not links). */
export function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}
