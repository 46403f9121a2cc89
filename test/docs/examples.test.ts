/**
 * Every TypeScript example of README.md and docs/ runs as written: each ```ts block is marked
 * `runnable`, typechecks under `tsc --strict` against the package's published types, and runs to
 * exit 0 against a real daemon, importing `execd-daemon` and `execd-daemon/protocol` by name through
 * the package's own `exports` (a node_modules entry that links to this tree, as an install would).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startDaemon } from '../helpers/daemon.js';
import { codeBlocks, docFiles, ROOT } from './doc-files.js';

const run = promisify(execFile);
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

interface Example {
  name: string;
  where: string;
  body: string;
  runnable: boolean;
}

const EXAMPLES: Example[] = docFiles().flatMap((doc) =>
  codeBlocks(doc.text)
    .filter((block) => block.info.split(/\s+/)[0] === 'ts')
    .map((block) => ({
      name: `${doc.path.replace(/[/.]/g, '-')}-${block.line}`,
      where: `${doc.path}:${block.line}`,
      body: block.body,
      runnable: block.info.split(/\s+/).includes('runnable'),
    })),
);

/** An empty project whose node_modules/execd-daemon is this tree, with every example as a file. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-doc-examples-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  symlinkSync(ROOT, join(dir, 'node_modules', 'execd-daemon'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'doc-examples', private: true, type: 'module' }));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        types: ['node'],
        outDir: 'out',
        skipLibCheck: true,
      },
      include: ['*.mts'],
    }),
  );
  for (const example of EXAMPLES.filter((each) => each.runnable))
    writeFileSync(join(dir, `${example.name}.mts`), example.body);
  return dir;
}

describe('the documentation examples', () => {
  it('are found, and every TypeScript block is marked runnable', () => {
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(3);
    expect(EXAMPLES.filter((example) => !example.runnable).map((example) => example.where)).toEqual([]);
  });

  it('typecheck against the package exports and run against a real daemon', async () => {
    const dir = project();
    await run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')], { cwd: dir }).catch((error: unknown) => {
      const { stdout } = error as { stdout?: string };
      throw new Error(`the examples do not typecheck:\n${stdout ?? String(error)}`);
    });
    const daemon = await startDaemon();
    const env = { ...process.env, EXECD_SOCKET: daemon.socketPath, EXECD_STATE_DIR: daemon.stateDir };
    const failures: string[] = [];
    for (const example of EXAMPLES.filter((each) => each.runnable)) {
      const script = join(dir, 'out', `${example.name}.mjs`);
      await run(process.execPath, [script], { cwd: dir, env, timeout: 60_000 }).catch((error: unknown) => {
        const { stderr, code } = error as { stderr?: string; code?: number };
        failures.push(`${example.where} exited ${String(code)}: ${stderr ?? String(error)}`);
      });
    }
    expect(failures).toEqual([]);
  });
});
