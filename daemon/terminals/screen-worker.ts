/**
 * The screen worker: a worker thread holding every terminal's emulated screen (screen.ts), so the
 * emulator's cost (a 1000×1000 screen takes ~0.5 s to create and up to ~50 ms per hostile
 * sequence) never runs on the daemon's event loop. Messages are `ScreenRequest`s; a render is
 * answered with a `ScreenReply`.
 */
import { parentPort } from 'node:worker_threads';
import { Screen } from './screen.js';

/** What the daemon asks of the worker. */
export type ScreenRequest =
  | { op: 'open'; id: number; cols: number; rows: number }
  | { op: 'write'; id: number; bytes: Uint8Array }
  | { op: 'resize'; id: number; cols: number; rows: number }
  | { op: 'render'; id: number; request: number; waitMs: number }
  /** The cursor once the output sent before was parsed, as `row;col` (empty when there is no screen). */
  | { op: 'cursor'; id: number; request: number; waitMs: number }
  | { op: 'close'; id: number };

/** The worker's answer to a render or a cursor request. */
export interface ScreenReply {
  request: number;
  text: string;
}

const screens = new Map<number, Screen>();

async function handle(message: ScreenRequest): Promise<void> {
  switch (message.op) {
    case 'open':
      screens.get(message.id)?.dispose();
      screens.set(message.id, new Screen(message.cols, message.rows));
      return;
    case 'write':
      screens.get(message.id)?.write(message.bytes);
      return;
    case 'resize':
      screens.get(message.id)?.resize(message.cols, message.rows);
      return;
    case 'render': {
      const screen = screens.get(message.id);
      if (screen) await screen.caughtUp(message.waitMs);
      const reply: ScreenReply = { request: message.request, text: screen?.render() ?? '' };
      parentPort?.postMessage(reply);
      return;
    }
    case 'cursor': {
      const screen = screens.get(message.id);
      if (screen) await screen.caughtUp(message.waitMs);
      const cursor = screen?.cursor();
      parentPort?.postMessage({
        request: message.request,
        text: cursor ? `${cursor.row};${cursor.col}` : '',
      } satisfies ScreenReply);
      return;
    }
    case 'close':
      screens.get(message.id)?.dispose();
      screens.delete(message.id);
      return;
  }
}

parentPort?.on('message', (message: ScreenRequest) => {
  handle(message).catch((error: Error) => {
    // A render must be answered even when the emulator failed.
    if (message.op === 'render' || message.op === 'cursor')
      parentPort?.postMessage({ request: message.request, text: '' } satisfies ScreenReply);
    process.emitWarning(`screen worker: ${error.message}`);
  });
});
