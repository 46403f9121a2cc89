/**
 * `execd cp`, `execd ls` and `execd cat`: files through the daemon (docs/files.md), also over
 * `EXECD_URL`. `cp` moves a file with `client.fs.upload`/`download` (its mode kept) and a
 * directory as one tar archive with `uploadTree`/`downloadTree` (docs/files.md: links and modes kept),
 * shows one progress line on a terminal and none when stderr is piped, and exits 0 only when
 * everything arrived.
 */
import { stat } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import type { ExecdClient } from '../connection.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { withClient } from './autostart.js';
import { parseDaemonPath, type DaemonPath } from './daemon-path.js';
import { usageError } from './errors.js';
import { attachSession, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd cp`. */
export const CP_HELP = commandHelp({
  usage: 'cp [--session ID] [-L] SRC DST',
  about: `Copies a file or a directory tree between this machine and the daemon's. One side is the
daemon's: ':PATH' (in --session) or 'SESSION:PATH'; a relative daemon path resolves against that
session's cwd. A file lands atomically (temp file, then rename) with its mode. A directory travels
as one tar archive: symlinks stay symlinks, hard links and modes are kept, and the tree appears
whole or not at all. It is copied into DST when DST is an existing directory, else becomes DST; a
directory already at that place is replaced whole. The session's sandbox policy applies. Shows a
progress line on a terminal. Exits 0 only when everything arrived.`,
  options: [
    SESSION_HELP,
    '  -L, --follow-link  upload what symlinks in SRC point to instead of the links (downloads keep links)',
  ],
  examples: [
    'execd cp ./build.tar.gz :/tmp/build.tar.gz',
    'execd cp agent-1:src ./src-copy',
    'execd cp -L ./app :/srv/app',
  ],
});

/** Help text of `execd ls`. */
export const LS_HELP = commandHelp({
  usage: 'ls [--session ID] [-l] [--depth N] [--json] [[SESSION]:]PATH',
  about: `Lists a directory on the daemon's side (sorted; symlinks listed, never followed).`,
  options: [
    SESSION_HELP,
    '  -l, --long         type, size and modification time of each entry',
    '  --depth N          levels to descend, 1-8 (default: 1)',
    '  --json             every entry as one JSON object per line',
  ],
  examples: ['execd ls :.', 'execd ls -l agent-1:/workspace'],
});

/** Help text of `execd cat`. */
export const CAT_HELP = commandHelp({
  usage: 'cat [--session ID] [[SESSION]:]PATH',
  about: `Writes a file on the daemon's side to stdout, bytes as they are.`,
  options: [SESSION_HELP],
  examples: ['execd cat :package.json', 'execd cat agent-1:/var/log/app.log | tail'],
});

/** A daemon path from an argument of `ls`/`cat`, where a bare path is the daemon's too. */
function daemonArg(arg: string, session: string): DaemonPath {
  return parseDaemonPath(arg, session) ?? { sessionId: session, path: arg };
}

/**
 * Attaches to every session the paths name, as they are: a look or a copy never creates a session
 * (one created here would be unconfined, with the CLI's cwd), so a missing one is an error naming it.
 */
async function openSessions(client: ExecdClient, paths: DaemonPath[]): Promise<void> {
  for (const sessionId of new Set(paths.map((path) => path.sessionId))) {
    if (!(await attachSession(client, sessionId)))
      throw new Error(`no session ${sessionId} in the daemon (execd run, execd start or a harness create one)`);
  }
}

/** A progress line on a terminal; nothing when stderr is not one. */
function progressLine(name: string): { update: (done: number, total: number) => void; end: () => void } {
  if (!process.stderr.isTTY) return { update: () => {}, end: () => {} };
  const started = performance.now();
  let shown = 0;
  return {
    update(done, total) {
      const now = performance.now();
      if (now - shown < 100 && done < total) return;
      shown = now;
      const percent = total < 0 ? '' : `  ${total === 0 ? 100 : Math.floor((done / total) * 100)}%`;
      const rate = done / 1048576 / Math.max((now - started) / 1000, 0.001);
      process.stderr.write(`\r\x1b[K${name}${percent}  ${(done / 1048576).toFixed(1)} MiB  ${rate.toFixed(1)} MiB/s`);
    },
    end: () => process.stderr.write('\r\x1b[K'),
  };
}

interface CopyTally {
  files: number;
  failed: number;
}

/** Reports one failed copy and counts it. */
function failed(tally: CopyTally, what: string, error: unknown): void {
  tally.failed++;
  process.stderr.write(`execd cp: ${what}: ${(error as Error).message}\n`);
}

/** Uploads a file (its mode kept) or a directory tree (one archive) to `remote`. */
async function uploadPath(
  client: ExecdClient,
  local: string,
  remote: DaemonPath,
  follow: boolean,
  tally: CopyTally,
): Promise<void> {
  const info = await stat(local);
  const line = progressLine(local);
  try {
    if (info.isDirectory()) {
      const result = await client.fs.uploadTree(local, remote.path, {
        sessionId: remote.sessionId,
        follow,
        overwrite: true,
        onProgress: (bytes) => line.update(bytes, -1),
      });
      tally.files += result.entries ?? 1;
    } else {
      await client.fs.upload(local, remote.path, {
        sessionId: remote.sessionId,
        onProgress: line.update,
        mode: info.mode & 0o777,
      });
      tally.files++;
    }
  } catch (error) {
    failed(tally, local, error);
  } finally {
    line.end();
  }
}

/** Downloads a file (its mode kept) or a directory tree (one archive) to `local`. */
async function downloadPath(client: ExecdClient, remote: DaemonPath, local: string, tally: CopyTally): Promise<void> {
  const info = await client.fs.stat(remote);
  const line = progressLine(remote.path);
  try {
    if (info.type === 'directory') {
      const result = await client.fs.downloadTree(remote.path, local, {
        sessionId: remote.sessionId,
        overwrite: true,
        onProgress: (bytes) => line.update(bytes, -1),
      });
      tally.files += result.entries;
    } else {
      await client.fs.download(local, remote.path, { sessionId: remote.sessionId, onProgress: line.update });
      tally.files++;
    }
  } catch (error) {
    failed(tally, `${remote.sessionId}:${remote.path}`, error);
  } finally {
    line.end();
  }
}

/** True when `local` is an existing directory. */
const isLocalDir = (local: string) =>
  stat(local).then(
    (info) => info.isDirectory(),
    () => false,
  );

/** Runs `execd cp`. */
export const cpCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('cp', {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, ...SESSION_OPTION, 'follow-link': { type: 'boolean', short: 'L', default: false } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 2) throw usageError('cp', 'takes exactly SRC and DST');
  const [src, dst] = positionals as [string, string];
  const from = parseDaemonPath(src, values.session);
  const to = parseDaemonPath(dst, values.session);
  if ((from === undefined) === (to === undefined))
    throw usageError('cp', "exactly one of SRC and DST must be the daemon's (:PATH or SESSION:PATH)");
  const tally: CopyTally = { files: 0, failed: 0 };
  await withClient(endpointOf(values, globals), async (client) => {
    await openSessions(client, [from ?? to!]);
    if (to) {
      const existing = await client.fs.stat(to).catch(() => undefined);
      const target = existing?.type === 'directory' ? { ...to, path: posix.join(to.path, basename(src)) } : to;
      await uploadPath(client, src, target, values['follow-link'], tally);
    } else {
      const local = (await isLocalDir(dst)) ? join(dst, posix.basename(from!.path)) : dst;
      await downloadPath(client, from!, local, tally);
    }
  });
  if (tally.failed > 0)
    process.stderr.write(`execd cp: ${tally.failed} of ${tally.files + tally.failed} copies failed\n`);
  return tally.failed === 0 ? 0 : 1;
};

/** Runs `execd ls`. */
export const lsCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('ls', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      long: { type: 'boolean', short: 'l', default: false },
      depth: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 1) throw usageError('ls', 'takes at most one PATH');
  const depth = values.depth === undefined ? undefined : Number(values.depth);
  if (depth !== undefined && !(Number.isInteger(depth) && depth >= 1 && depth <= 8))
    throw usageError('ls', `--depth must be an integer from 1 to 8, got ${JSON.stringify(values.depth)}`);
  const target = daemonArg(positionals[0] ?? '.', values.session);
  await withClient(endpointOf(values, globals), async (client) => {
    await openSessions(client, [target]);
    let cursor: string | undefined;
    do {
      const page = await client.fs.list({ ...target, depth, cursor });
      for (const entry of page.entries) {
        if (values.json) process.stdout.write(`${JSON.stringify(entry)}\n`);
        else if (values.long)
          process.stdout.write(
            `${entry.type.padEnd(9)} ${String(entry.size).padStart(12)} ${new Date(entry.mtimeMs).toISOString()} ${entry.path}\n`,
          );
        else process.stdout.write(`${entry.path}${entry.type === 'directory' ? '/' : ''}\n`);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  });
  return 0;
};

/** Runs `execd cat`. */
export const catCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('cat', {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, ...SESSION_OPTION },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw usageError('cat', 'takes exactly one PATH');
  const target = daemonArg(positionals[0]!, values.session);
  await withClient(endpointOf(values, globals), async (client) => {
    await openSessions(client, [target]);
    let offset = 0;
    let version: string | undefined;
    for (;;) {
      const page = await client.fs.read({ ...target, offset });
      // Every page from one version: a file replaced mid-read is read again from the start.
      if (version !== undefined && page.version !== version)
        throw new Error(`${target.path} changed while it was read`);
      version = page.version;
      const bytes = Buffer.from(page.data, 'base64');
      if (!process.stdout.write(bytes)) await new Promise((resolve) => process.stdout.once('drain', resolve));
      offset += bytes.length;
      if (page.eof || bytes.length === 0) break;
    }
  });
  return 0;
};
