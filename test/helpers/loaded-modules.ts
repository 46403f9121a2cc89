/**
 * Which files a real node process loads: ESM modules through a resolve hook, CommonJS ones from
 * `require.cache` at exit (node 20's hooks do not see `require`). The tracer files live in a temp
 * dir removed when the test finishes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { onTestFinished } from 'vitest';

/** The root of the built code, as a file URL prefix. */
export const DIST_URL = pathToFileURL(join(import.meta.dirname, '..', '..', 'dist')).href;

/** What a traced process did and loaded. */
export interface TracedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** File URLs loaded through `import`. */
  esm: string[];
  /** File URLs loaded through `require` (including CommonJS packages that ESM code imported). */
  cjs: string[];
}

const HOOKS = `
import { appendFileSync } from 'node:fs';
let out;
export function initialize(data) { out = data.out; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.startsWith('file:')) appendFileSync(out, result.url + '\\n');
  return result;
}
`;

const REGISTER = `
import { register } from 'node:module';
register('./hooks.mjs', import.meta.url, { data: { out: process.env.EXECD_TRACE_ESM } });
`;

const CJS_LISTER = `
const { appendFileSync } = require('node:fs');
const { pathToFileURL } = require('node:url');
process.on('exit', () => {
  const urls = Object.keys(require.cache).filter((path) => path !== __filename).map((path) => pathToFileURL(path).href);
  appendFileSync(process.env.EXECD_TRACE_CJS, urls.join('\\n') + '\\n');
});
`;

function lines(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return [...new Set(text.split('\n').filter((line) => line !== ''))];
}

/** Runs `node ARGS...` with the tracer; resolves once it exits. */
export function traceModules(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<TracedRun> {
  const dir = mkdtempSync(join(tmpdir(), 'execd-trace-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  writeFileSync(join(dir, 'register.mjs'), REGISTER);
  writeFileSync(join(dir, 'cjs-lister.cjs'), CJS_LISTER);
  const esmOut = join(dir, 'esm.txt');
  const cjsOut = join(dir, 'cjs.txt');
  const child = spawn(
    process.execPath,
    ['--import', pathToFileURL(join(dir, 'register.mjs')).href, '--require', join(dir, 'cjs-lister.cjs'), ...args],
    {
      cwd: options.cwd ?? dir,
      env: { ...process.env, ...options.env, EXECD_TRACE_ESM: esmOut, EXECD_TRACE_CJS: cjsOut },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr, esm: lines(esmOut), cjs: lines(cjsOut) })),
  );
}

/** Runs an ESM script (`--input-type=module -e`) with the tracer. */
export function traceScript(script: string, options: { env?: NodeJS.ProcessEnv } = {}): Promise<TracedRun> {
  return traceModules(['--input-type=module', '-e', script], options);
}

/** The loaded files of a traced run that belong to the `zod` package. */
export function zodFiles(urls: string[]): string[] {
  return urls.filter((url) => url.includes('/node_modules/zod/'));
}
