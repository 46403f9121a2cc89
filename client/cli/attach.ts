/**
 * `execd attach TERMINAL`: this terminal joined to a daemon terminal, like `tmux attach`. Keys go
 * to it as typed (raw mode, `terminal/write`), its output arrives live (`terminal/attach` +
 * `terminal/output`), and its size follows this window (`terminal/resize` on SIGWINCH). `Ctrl-]`
 * detaches and leaves it running.
 */
import { StringDecoder } from 'node:string_decoder';
import {
  TerminalAttach,
  TerminalDetach,
  TerminalExited,
  TerminalOutput,
  TerminalRead,
  TerminalResize,
  TerminalWrite,
} from '../../protocol/methods.js';
import type { ExecdClient } from '../connection.js';
import { terminalExitedLine } from '../terminal-render.js';
import { commandHelp, type CommandRunner } from './args.js';
import { connectOrStart } from './autostart.js';
import { attachSession, noSession, SESSION_HELP } from './session.js';
import { parseTerminalCommand, terminalIdArgument } from './term-common.js';

/** The detach key: Ctrl-] (0x1d), as telnet's escape. */
export const DETACH_KEY = '\x1d';

/** Help text of `execd attach`. */
export const ATTACH_HELP = commandHelp({
  usage: 'attach TERMINAL [--session ID]',
  about: `Joins this terminal to TERMINAL: what it shows appears here live, what you type goes to it as
typed (Ctrl-C included: it reaches TERMINAL's program, not this command), and its size follows this
window. Ctrl-] detaches; TERMINAL keeps running. Use it to watch an agent's terminal or to type the
password its command waits for (pass the agent's --session; note that this reopens that session
with this shell's working directory).`,
  options: [SESSION_HELP],
  examples: ['execd attach term-1 --session agent-1'],
});

/** The size of this window, when stdout is a terminal. */
function windowSize(): { cols: number; rows: number } | undefined {
  const { columns, rows } = process.stdout;
  return process.stdout.isTTY && columns > 0 && rows > 0 ? { cols: columns, rows } : undefined;
}

/** Clears this window and draws the terminal's current screen, so the person sees where it stands. */
function drawScreen(screen: string): void {
  const lines = screen.replace(/\n+$/, '').split('\n');
  process.stdout.write(`\x1b[H\x1b[2J${lines.join('\r\n')}`);
}

/** Runs `execd attach`; resolves with 0 on detach, or the terminal's exit code when it exits. */
export const attachCommand: CommandRunner = async (argv, globals) => {
  const { positionals, sessionId, endpoint } = parseTerminalCommand('attach', argv, globals, {});
  const terminalId = terminalIdArgument('attach', positionals);
  const client = await connectOrStart(endpoint);
  try {
    if (!(await attachSession(client, sessionId))) throw noSession('attach', sessionId);
    return await attached(client, sessionId, terminalId);
  } finally {
    client.close();
  }
};

async function attached(client: ExecdClient, sessionId: string, terminalId: string): Promise<number> {
  const ids = { sessionId, terminalId };
  const size = windowSize();
  if (size) await client.call(TerminalResize, { ...ids, ...size });
  const screen = await client.call(TerminalRead, { ...ids, view: 'screen' });
  if (screen.terminal.status === 'exited') {
    process.stderr.write(`execd attach: ${terminalId} ${terminalExitedLine(screen.terminal).slice(1, -1)}\n`);
    return 1;
  }

  return new Promise<number>((resolve) => {
    const stdin = process.stdin;
    const decoder = new StringDecoder('utf8');
    let finished = false;
    // Keys are written one request after the other, so they reach the terminal in the order typed.
    let writes: Promise<unknown> = Promise.resolve();
    const write = (data: string) => {
      if (data.length === 0) return;
      writes = writes.then(() => client.call(TerminalWrite, { ...ids, data })).catch(() => undefined);
    };

    const finish = (code: number, message: string) => {
      if (finished) return;
      finished = true;
      stdin.off('data', onKeys);
      process.off('SIGWINCH', onResize);
      subscriptions.forEach((subscription) => subscription.dispose());
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write(`\r\n${message}\r\n`);
      resolve(code);
    };

    const onKeys = (chunk: Buffer) => {
      const text = decoder.write(chunk);
      const detachAt = text.indexOf(DETACH_KEY);
      if (detachAt === -1) return write(text);
      write(text.slice(0, detachAt));
      writes
        .then(() => client.call(TerminalDetach, ids))
        // Detaching is best effort: closing the connection ends the notifications anyway.
        .catch(() => undefined)
        .then(() => finish(0, `[detached from ${terminalId}; it keeps running]`))
        // Only the teardown in `finish` can throw here: report it and end the command all the same.
        .catch((error: unknown) => {
          process.stderr.write(`execd attach: ${error instanceof Error ? error.message : String(error)}\n`);
          resolve(125);
        });
    };

    const onResize = () => {
      const next = windowSize();
      if (next) client.call(TerminalResize, { ...ids, ...next }).catch(() => undefined);
    };

    const subscriptions = [
      client.onNotification(TerminalOutput, (params) => {
        if (params.terminalId === terminalId && !finished) process.stdout.write(params.data);
      }),
      client.onNotification(TerminalExited, (params) => {
        if (params.terminal.id !== terminalId) return;
        const { exitCode, signal } = params.terminal;
        finish(signal ? 1 : (exitCode ?? 0), terminalExitedLine(params.terminal));
      }),
      client.onClose(() => finish(125, 'execd attach: the connection to the daemon was lost')),
    ];

    drawScreen(screen.text);
    client
      .call(TerminalAttach, { ...ids, offset: screen.nextOffset })
      .then(() => {
        if (stdin.isTTY) stdin.setRawMode(true);
        stdin.on('data', onKeys);
        stdin.resume();
        process.on('SIGWINCH', onResize);
      })
      .catch((error: unknown) =>
        finish(125, `execd attach: ${error instanceof Error ? error.message : String(error)}`),
      );
  });
}
