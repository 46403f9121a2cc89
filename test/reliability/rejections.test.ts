/**
 * A failure inside one request is that request's error: a run or job whose spawn throws (a NUL byte
 * in the command) is answered with an error and the daemon serves the next request.
 */
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';

describe('a request that throws inside the daemon', () => {
  it('a NUL byte in shell/run is answered as an error; the daemon keeps serving', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const error = await client.run({ sessionId: 's1', command: 'echo a\u0000b' }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ExecdRpcError);
    console.log(`rejections: NUL in shell/run answered: ${(error as Error).message}`);
    const next = await client.run({ sessionId: 's1', command: 'echo next' });
    expect(next.stdout.text).toBe('next\n');
  });

  it('a NUL byte in shell/start is answered as an error; the daemon keeps serving', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const error = await client.call(ShellStart, { sessionId: 's1', command: 'echo a\u0000b' }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(ExecdRpcError);
    const next = await client.run({ sessionId: 's1', command: 'echo next' });
    expect(next.stdout.text).toBe('next\n');
  });
});
