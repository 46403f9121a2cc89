/**
 * The streamed side of `shell/run`: the open stdin `shell/write` feeds (`keepStdinOpen`), the
 * exact-bytes progress (`outputEncoding: 'base64'`), and dropping a capture the caller already
 * holds (`keepCapture: false`).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import { OutputBytesProgressType, OutputProgressType, ShellWrite, type DataEncoding } from '../../protocol/methods.js';
import type { ShellRunResult } from '../../protocol/types.js';
import { ensurePrivateDir } from '../../spill/spill-file.js';
import { RunStdin } from '../executor/run-stdin.js';
import type { StreamName } from '../runs/foreground.js';
import type { ClientConnection } from '../net/connection.js';
import { handler, type RunAttachment } from '../net/handler.js';

/** The open stdins of each connection's runs, by session and output token. */
const openStdins = new WeakMap<ClientConnection, Map<string, RunStdin>>();

const keyOf = (sessionId: string, token: string | number) => `${sessionId}\n${typeof token}:${String(token)}`;

/**
 * Opens the stdin of a run about to start (`keepStdinOpen`), registered under its token so that
 * `shell/write` finds it; the returned `close` ends and unregisters it when the run is over.
 */
export function openRunStdin(
  conn: ClientConnection,
  sessionId: string,
  token: string | number,
  dir: string,
  runName: string,
): { stdin: RunStdin; close: () => void } | ExecdError {
  let stdins = openStdins.get(conn);
  if (!stdins) openStdins.set(conn, (stdins = new Map<string, RunStdin>()));
  const key = keyOf(sessionId, token);
  if (stdins.has(key)) return new ExecdError('INVALID_PARAMS', `outputToken: a run with this token is still running`);
  let stdin: RunStdin;
  try {
    ensurePrivateDir(dir);
    stdin = new RunStdin(join(dir, `${runName}.stdin`));
  } catch (error) {
    return new ExecdError('SPAWN_FAILED', `cannot create the run's stdin: ${(error as Error).message}`);
  }
  stdins.set(key, stdin);
  return {
    stdin,
    close: () => {
      stdin.destroy();
      if (stdins.get(key) === stdin) stdins.delete(key);
    },
  };
}

/**
 * The progress sender of a streamed run, in its encoding, to whichever request is attached to the
 * run now (a keyed run re-sent from another connection, docs/reconnect.md); nothing while that request has
 * no `outputToken`; a failed send (the connection went) is dropped.
 */
export function progressSender(
  attached: () => RunAttachment,
  encoding: DataEncoding | undefined,
): { onOutput?: (stream: StreamName, text: string) => void; onBytes?: (stream: StreamName, chunk: Buffer) => void } {
  // Called from a pipe's 'data' listener, where a throw would end the daemon.
  const send = (payload: (conn: ClientConnection, token: string | number) => Promise<void>) => {
    const { conn, params } = attached();
    const token = params.outputToken as string | number | undefined;
    if (token === undefined || conn.closed) return;
    try {
      payload(conn, token).catch(() => {});
    } catch {
      // The connection is gone; its run is aborted by the close, or waits out its grace.
    }
  };
  if (encoding === 'base64') {
    return {
      onBytes: (stream, chunk) =>
        send((conn, token) =>
          conn.rpc.sendProgress(OutputBytesProgressType, token, { stream, data: chunk.toString('base64') }),
        ),
    };
  }
  return {
    onOutput: (stream, text) =>
      send((conn, token) => conn.rpc.sendProgress(OutputProgressType, token, { stream, text })),
  };
}

/** `keepCapture: false`: deletes the spill files of a streamed run (its caller has every byte) and leaves their paths out. */
export function dropCapture(result: ShellRunResult): ShellRunResult {
  for (const output of [result.stdout, result.stderr]) {
    if (output.spillPath === undefined) continue;
    rmSync(output.spillPath, { force: true });
    delete output.spillPath;
  }
  return result;
}

/** Decodes `shell/write` data; INVALID_PARAMS for base64 that is not. */
function decodeData(data: string, encoding: DataEncoding | undefined): Buffer | ExecdError {
  if (encoding !== 'base64') return Buffer.from(data, 'utf8');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) {
    return new ExecdError('INVALID_PARAMS', 'data: must be base64 (encoding is base64)');
  }
  return Buffer.from(data, 'base64');
}

/** Handlers of the streamed-run methods. */
export const shellStreamHandlers = [
  handler(ShellWrite, (params, { daemon, conn }) => {
    const session = daemon.sessions.require(params.sessionId, conn);
    if (session instanceof ExecdError) return session;
    const bytes = decodeData(params.data, params.encoding);
    if (bytes instanceof ExecdError) return bytes;
    const stdin = openStdins.get(conn)?.get(keyOf(params.sessionId, params.outputToken));
    if (!stdin) {
      return new ExecdError(
        'STDIN_CLOSED',
        `no running shell/run of this connection with outputToken ${JSON.stringify(params.outputToken)} has an open stdin`,
      );
    }
    return stdin.write(bytes, params.eof ?? false);
  }),
];
