/** A foreground run that keeps its spill file open: it writes, says so, then waits to be aborted. */
import type { ExecdClient } from '../../client/connection.js';
import type { ShellRunResult } from '../../protocol/types.js';
import { waitFor } from './wait.js';

/** A run holding its spill file open until `abort` answers it. */
export interface HeldRun {
  /** Aborts the run and resolves with its (aborted) result. */
  abort(): Promise<ShellRunResult>;
}

/** Starts a run that writes `bytes` zero bytes to stdout and waits until they are all written. */
export async function startHeldRun(client: ExecdClient, sessionId: string, bytes: number): Promise<HeldRun> {
  const controller = new AbortController();
  let stderr = '';
  const running = client.run(
    { sessionId, command: `head -c ${bytes} /dev/zero; echo ready >&2; sleep 300` },
    { signal: controller.signal, onOutput: ({ stream, text }) => void (stream === 'stderr' && (stderr += text)) },
  );
  await waitFor(() => stderr.includes('ready'), `the held run to write ${bytes} bytes`);
  return {
    abort() {
      controller.abort();
      return running;
    },
  };
}
