/**
 * The package as a harness author gets it (SPEC §11): `npm pack` of the built tree, the tarball's
 * file list, and a fresh install into an empty project — from the tarball and the npm
 * cache first (metadata the cache lacks comes from the registry) — whose small harness typechecks under `tsc --strict` against the published `.d.ts` files
 * and then runs against a real daemon.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startDaemon } from '../helpers/daemon.js';

const ROOT = join(import.meta.dirname, '..', '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-pack-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Packs the already built tree (`npm test` builds first; the prepack build is skipped here). */
function pack(into: string): { tarball: string; files: string[]; modes: Map<string, number>; name: string } {
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', into], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const [info] = JSON.parse(out) as Array<{
    name: string;
    filename: string;
    files: Array<{ path: string; mode: number }>;
  }>;
  return {
    tarball: join(into, info!.filename),
    files: info!.files.map((file) => file.path),
    modes: new Map(info!.files.map((file) => [file.path, file.mode])),
    name: info!.name,
  };
}

const HARNESS = `
import { connect, createShellTools, isYielded, parseExitStatus, renderResult, type ShellTools } from 'execd-daemon';
import { SessionOpen, ShellRun, type JobSnapshot, type ShellRunResult } from 'execd-daemon/protocol';

const client = await connect();
await client.call(SessionOpen, { sessionId: 'harness', cwd: process.cwd() });
// shell/run answers ShellRunResult | YieldedRunResult (yieldMs); client.run without yieldMs is typed ShellRunResult.
const answer = await client.call(ShellRun, { sessionId: 'harness', command: 'echo packed; exit 4' });
if (isYielded(answer)) throw new Error('a run without yieldMs never yields');
const result: ShellRunResult = answer;
const again: ShellRunResult = await client.run({ sessionId: 'harness', command: 'true' });
const tools: ShellTools = await createShellTools({ client, session: { id: 'harness' } });
const jobs: JobSnapshot[] = [];
const parsed = parseExitStatus(renderResult(result));
console.log(JSON.stringify({ parsed, tools: tools.tools.map((tool) => tool.name), jobs: jobs.length + again.exitCode! }));
tools.dispose();
client.close();
`;

describe('the npm package', () => {
  it('is named execd-daemon (the name execd is taken on the registry), its command is execd, its license is shipped', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      name: string;
      bin: Record<string, string>;
      license: string;
    };
    expect(manifest.name).toBe('execd-daemon');
    expect(Object.keys(manifest.bin)).toEqual(['execd']);
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(new RegExp(`^${manifest.license} License\\n`));
  });

  it('keeps the bin executable through the build that prepack runs', { timeout: 120_000 }, () => {
    // Built aside: the other test files run dist/bundle/ meanwhile, and a build empties it first.
    const out = tempDir();
    execFileSync('node', [join(ROOT, 'deploy', 'bundle.mjs'), out], { cwd: ROOT, encoding: 'utf8' });
    expect(statSync(join(out, 'main.js')).mode & 0o111).toBe(0o111);
    const { modes, name } = pack(tempDir());
    expect(name).toBe('execd-daemon');
    expect((modes.get('dist/bundle/main.js') ?? 0) & 0o111).toBe(0o111);
  });

  it('ships the built library, its types and the CLI, and nothing of the tests, bench or sources', () => {
    const { files } = pack(tempDir());
    for (const needed of [
      'package.json',
      'README.md',
      'PROTOCOL.md',
      'dist/client/index.js',
      'dist/client/index.d.ts',
      'dist/protocol/index.js',
      'dist/protocol/index.d.ts',
      'dist/client/cli/main.js',
      'dist/daemon/server.js',
      'dist/bundle/main.js',
      'dist/bundle/spawn-worker.js',
      'dist/bundle/zod.cjs',
      'LICENSE',
    ])
      expect(files).toContain(needed);
    const stray = files.filter(
      (file) =>
        file.startsWith('test/') ||
        file.startsWith('bench/') ||
        file.startsWith('dist/test/') ||
        file.startsWith('dist/bench/') ||
        file.startsWith('dist/examples/') ||
        file.endsWith('.map') ||
        (file.endsWith('.ts') && !file.endsWith('.d.ts')),
    );
    expect(stray).toEqual([]);
  });

  // npm install and tsc take most of a minute on a loaded 2-core machine.
  it(
    'installs into an empty project, typechecks a harness with tsc --strict, and runs it',
    { timeout: 240_000 },
    async () => {
      const work = tempDir();
      const { tarball } = pack(work);
      const project = join(work, 'harness');
      execFileSync('mkdir', ['-p', project]);
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'harness', private: true, type: 'module' }));
      const typesNode = (
        JSON.parse(readFileSync(join(ROOT, 'node_modules', '@types', 'node', 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version;
      execFileSync(
        'npm',
        [
          'install',
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          '--ignore-scripts',
          tarball,
          `@types/node@${typesNode}`,
        ],
        { cwd: project, encoding: 'utf8' },
      );
      writeFileSync(join(project, 'harness.ts'), HARNESS);
      execFileSync(
        process.execPath,
        [
          TSC,
          '--strict',
          '--target',
          'es2022',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--types',
          'node',
          'harness.ts',
        ],
        { cwd: project, encoding: 'utf8' },
      );

      const daemon = await startDaemon();
      const out = execFileSync(process.execPath, ['harness.js'], {
        cwd: project,
        encoding: 'utf8',
        env: { ...process.env, EXECD_SOCKET: daemon.socketPath, EXECD_STATE_DIR: daemon.stateDir },
      });
      expect(JSON.parse(out)).toEqual({
        parsed: { body: 'packed', exitCode: 4 },
        tools: ['bash', 'job_output', 'job_kill', 'job_list'],
        jobs: 0,
      });
      const help = execFileSync(join(project, 'node_modules', '.bin', 'execd'), ['--help'], { encoding: 'utf8' });
      expect(help).toContain('usage: execd');
    },
  );
});
