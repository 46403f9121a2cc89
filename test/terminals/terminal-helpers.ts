/** Helpers of the terminal tests: a daemon with a session, a shell terminal, and runs in it. */
import type { ExecdClient } from '../../client/connection.js';
import { TerminalOpen, TerminalRun, type ParamsOf } from '../../protocol/methods.js';
import type { TerminalRunResult } from '../../protocol/terminal.js';
import { startDaemon, type TestDaemon, type TestDaemonOptions } from '../helpers/daemon.js';

/** A daemon, a client with session `s1` open, and a shell terminal in it. */
export interface ShellFixture {
  daemon: TestDaemon;
  client: ExecdClient;
  sessionId: string;
  terminalId: string;
  run: (command: string, extra?: Partial<ParamsOf<typeof TerminalRun>>) => Promise<TerminalRunResult>;
}

/** Starts a daemon (fast grace by default) and opens a shell terminal in session `s1`. */
export async function shellFixture(options: TestDaemonOptions = {}): Promise<ShellFixture> {
  const daemon = await startDaemon({ ...options, config: { graceMs: 500, ...options.config } });
  const sessionId = 's1';
  const client = await daemon.session(sessionId);
  const opened = await client.call(TerminalOpen, { sessionId });
  const terminalId = opened.terminal.id;
  return {
    daemon,
    client,
    sessionId,
    terminalId,
    run: (command, extra = {}) => client.call(TerminalRun, { sessionId, terminalId, command, ...extra }),
  };
}
