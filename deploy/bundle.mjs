/**
 * Bundles the built CLI and daemon (dist/, from tsc) into dist/bundle/: the `execd` command that
 * users run and that auto-starts daemons. One file per entry plus shared chunks, so a process
 * reads a handful of files instead of resolving ~250 modules, and the chunks are minified, which
 * V8 parses faster (docs/performance.md has the figures).
 *
 * Every entry lands flat in dist/bundle/, next to the chunks, so what the sources find relative to
 * their own module (`new URL('./spawn-worker.js', import.meta.url)`, `../../package.json`) is
 * found the same way from any chunk. Native addons (koffi, node-pty) and xterm, which the sources
 * load through `createRequire`, stay in node_modules.
 */
import { chmodSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { build } from 'esbuild';

const ROOT = join(import.meta.dirname, '..');
const DIST = join(ROOT, 'dist');
/** dist/bundle/, or the directory named as the first argument (a test builds aside of the tree in use). */
const OUT = process.argv[2] ? resolve(process.argv[2]) : join(DIST, 'bundle');

/** The entry scripts: the CLI, and the helpers the daemon starts by file name. */
const ENTRIES = [
  'client/cli/main.js',
  'daemon/executor/spawn-worker.js',
  'daemon/terminals/screen-worker.js',
  'daemon/waits/regex-worker.js',
  'daemon/fs/watch-worker.js',
  'daemon/sandbox/landlock-launcher.js',
  'daemon/sandbox/confined-worker.js',
];

/**
 * The protocol's lazy `createRequire` loads, as the bundle needs them. protocol/zod.ts requires
 * `./zod.cjs`, zod bundled alone (a chunk would be linked into every command that imports the
 * protocol, and parsed by each even if never run); protocol/jsonrpc.ts's requires become plain
 * `require`s that esbuild bundles, one copy with the daemon's own imports of vscode-jsonrpc.
 */
const REWRITES = [
  {
    file: /[\\/]dist[\\/]protocol[\\/]zod\.js$/,
    from: "createRequire(import.meta.url)('zod')",
    to: "createRequire(import.meta.url)('./zod.cjs')",
  },
  { file: /[\\/]dist[\\/]protocol[\\/]jsonrpc\.js$/, from: "load('vscode-jsonrpc/", to: "require('vscode-jsonrpc/" },
];
const protocolRequires = {
  name: 'protocol-requires',
  setup(onBuild) {
    for (const { file, from, to } of REWRITES) {
      onBuild.onLoad({ filter: file }, async ({ path }) => {
        const source = await readFile(path, 'utf8');
        if (!source.includes(from)) throw new Error(`${path}: expected ${from}`);
        return { contents: source.replaceAll(from, to), loader: 'js' };
      });
    }
  },
};

/**
 * zod's messages in English only: its other 60-odd locales are half its code, and execd's error
 * messages are its own English (protocol/fields.ts) anyway.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(onBuild) {
    onBuild.onLoad({ filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.c?js$/ }, ({ path }) => ({
      contents: path.endsWith('.cjs')
        ? "exports.en = require('./en.cjs').default;"
        : "export { default as en } from './en.js';",
      loader: 'js',
      resolveDir: dirname(path),
    }));
  },
};

// Chunks are named by content: the last build's must not linger.
rmSync(OUT, { recursive: true, force: true });
await build({
  entryPoints: ENTRIES.map((entry) => join(DIST, entry)),
  outdir: OUT,
  entryNames: '[name]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Whitespace and syntax only: function and class names stay readable in logged stacks.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  external: ['koffi', '@lydell/node-pty', '@xterm/headless'],
  // CommonJS packages inside an ES module bundle still call `require` for Node's built-ins.
  banner: {
    js: "import { createRequire as __execdRequire } from 'node:module'; const require = __execdRequire(import.meta.url);",
  },
  plugins: [protocolRequires, zodEnglishOnly],
  metafile: true,
  logLevel: 'warning',
}).then(async ({ metafile }) => {
  // Which sources each output holds, for the tests of what a command loads.
  await writeFile(join(OUT, 'meta.json'), JSON.stringify(metafile));
});
await build({
  entryPoints: ['zod'],
  outfile: join(OUT, 'zod.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // Its names too: zod's errors are values, its internals never show in execd's logs.
  minify: true,
  plugins: [zodEnglishOnly],
  logLevel: 'warning',
});
chmodSync(join(OUT, 'main.js'), 0o755);
