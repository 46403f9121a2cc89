/**
 * Feeds a running `shell/run` with `keepStdinOpen` from a readable stream: one `shell/write` at a
 * time (each answered once the command's pipe took it), so the command's reading paces the
 * source and nothing is capped or queued here; EOF when the source ends.
 */
import type { Readable } from 'node:stream';
import { ShellWrite } from '../protocol/methods.js';
import type { ExecdClient } from './connection.js';

/** Largest chunk of one `shell/write`. */
const WRITE_CHUNK_BYTES = 256 * 1024;

/** A running pump; `stop` detaches it from the source (the run is over) without consuming more. */
export interface InputPump {
  stop(): void;
}

/** Starts pumping `source` into the run `outputToken` of `sessionId`; write failures end the pump quietly. */
export function pumpInput(client: ExecdClient, sessionId: string, outputToken: string, source: Readable): InputPump {
  let stopped = false;
  let writing = false;
  let ended = false;
  const write = (data: Buffer, eof: boolean) =>
    client.call(ShellWrite, { sessionId, outputToken, data: data.toString('base64'), encoding: 'base64', eof });
  const onData = (chunk: Buffer | string) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    source.pause();
    writing = true;
    forward(bytes).catch(() => stop());
  };
  /** Writes one chunk of the source, then reads on (or ends stdin once the source has ended). */
  const forward = async (bytes: Buffer) => {
    try {
      for (let at = 0; at < bytes.length && !stopped; at += WRITE_CHUNK_BYTES) {
        await write(bytes.subarray(at, at + WRITE_CHUNK_BYTES), false);
      }
    } catch {
      // The run ended or closed its stdin: nothing more is read.
      stop();
      return;
    } finally {
      writing = false;
    }
    if (stopped) return;
    if (ended) await finish();
    else source.resume();
  };
  const finish = async () => {
    if (stopped) return;
    stop();
    await write(Buffer.alloc(0), true).catch(() => undefined);
  };
  const onEnd = () => {
    ended = true;
    if (!writing) finish().catch(() => undefined);
  };
  const onError = () => onEnd();
  function stop(): void {
    if (stopped) return;
    stopped = true;
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('error', onError);
    source.pause();
  }
  source.on('data', onData);
  source.once('end', onEnd);
  source.once('error', onError);
  return { stop };
}
