/**
 * Issue 13, point 8: nothing a peer does before `initialize` costs the daemon much. Frames before
 * authentication are capped at 64 KiB, a silent connection is closed after `handshakeTimeoutMs`,
 * and `maxConnections` refuses one connection too many; other clients are served throughout.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PRE_AUTH_MAX_MESSAGE_BYTES } from '../../daemon/net/connection.js';
import { startDaemon } from '../helpers/daemon.js';
import { rawAuthed, rawConnect, type RawConnection } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';

/** Resident set size of a process in MB, from /proc. */
function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return Math.round(kb / 102.4) / 10;
}

const FLOOD_CONNECTIONS = 100;
const FRAME_BYTES = 15_000_000;

describe('before authentication', () => {
  it('100 unauthenticated connections sending 15 MB frames: RSS stays bounded, a normal client is served', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    await client.run({ sessionId: 's1', command: 'true' });
    const before = rssMb(daemon.pid);
    // One body shared by every write: the test itself must not hold 1.5 GB.
    const body = Buffer.alloc(FRAME_BYTES, 0x20);
    const flood: RawConnection[] = [];
    for (let i = 0; i < FLOOD_CONNECTIONS; i++) {
      const raw = await rawConnect(daemon.socketPath);
      raw.sendBytes(`Content-Length: ${FRAME_BYTES}\r\n\r\n`);
      raw.sendBytes(body);
      flood.push(raw);
    }
    // Served while the flood is on.
    const during = await client.run({ sessionId: 's1', command: 'echo served' });
    expect(during.stdout.text).toBe('served\n');
    await Promise.all(flood.map((raw) => raw.closed));
    const peak = rssMb(daemon.pid);
    for (const raw of flood) {
      expect(raw.messages[0]).toMatchObject({ id: null, error: { code: -32008, data: { code: 'LIMIT_EXCEEDED' } } });
      expect(raw.messages[0]?.error?.message).toBe(
        `message of ${FRAME_BYTES} bytes is larger than the limit before initialize (${PRE_AUTH_MAX_MESSAGE_BYTES})`,
      );
    }
    // A frame within the pre-authentication cap that is not initialize: refused, closed.
    const small = await rawConnect(daemon.socketPath);
    const refused = await small.request('daemon/status', { padding: 'x'.repeat(60_000) });
    expect(refused?.error?.data?.code).toBe('UNAUTHORIZED');
    await small.closed;
    const after = await client.run({ sessionId: 's1', command: 'echo still served' });
    expect(after.stdout.text).toBe('still served\n');
    const left = rssMb(daemon.pid);
    console.log(
      `unauthenticated flood: ${FLOOD_CONNECTIONS} connections × ${FRAME_BYTES} byte frames; daemon RSS ${before} MB before, ` +
        `${peak} MB when all were refused, ${left} MB after (issue: 74 → 1,514 MB)`,
    );
    expect(peak - before).toBeLessThan(100);
  });

  it('a silent connection is closed after handshakeTimeoutMs; an authenticated one stays', async () => {
    const daemon = await startDaemon({ config: { handshakeTimeoutMs: 500 } });
    const authed = await rawAuthed(daemon.socketPath, daemon.stateDir);
    const started = Date.now();
    const silent = await rawConnect(daemon.socketPath);
    // Half a header is as silent as nothing at all.
    silent.sendBytes('Content-Len');
    await silent.closed;
    const elapsed = Date.now() - started;
    expect(silent.messages[0]).toMatchObject({ id: null, error: { data: { code: 'UNAUTHORIZED' } } });
    expect(silent.messages[0]?.error?.message).toBe('no initialize within handshakeTimeoutMs (500)');
    expect(elapsed).toBeGreaterThanOrEqual(450);
    // Well past the timeout, the authenticated connection still answers.
    await waitFor(() => Date.now() - started > 1_200, 'the handshake timeout to pass twice');
    const status = await authed.request('daemon/status', {});
    expect(status?.result).toBeDefined();
    expect(authed.isClosed()).toBe(false);
    console.log(`handshake timeout: a silent connection was closed after ${elapsed} ms (handshakeTimeoutMs=500)`);
  });

  it('maxConnections: one connection too many is answered LIMIT_EXCEEDED and closed; a freed slot serves', async () => {
    const daemon = await startDaemon({ config: { maxConnections: 3 } });
    const held = [
      await rawAuthed(daemon.socketPath, daemon.stateDir),
      await rawAuthed(daemon.socketPath, daemon.stateDir),
      await rawConnect(daemon.socketPath),
    ];
    const extra = await rawConnect(daemon.socketPath);
    await extra.closed;
    expect(extra.messages[0]).toMatchObject({ id: null, error: { code: -32008, data: { code: 'LIMIT_EXCEEDED' } } });
    expect(extra.messages[0]?.error?.message).toBe('maxConnections limit reached (3)');
    // The held ones still work.
    expect((await held[0]!.request('daemon/status', {}))?.result).toBeDefined();
    held[2]!.close();
    const served = await waitFor(async () => {
      const next = await rawConnect(daemon.socketPath);
      const answer = await next.request('daemon/status', {});
      next.close();
      return answer?.error?.data?.code === 'UNAUTHORIZED' ? answer : undefined;
    }, 'a freed slot to accept a new connection');
    expect(served.error?.message).toMatch(/initialize/);
    const client = await daemon.session('s1');
    expect((await client.run({ sessionId: 's1', command: 'echo in' })).stdout.text).toBe('in\n');
    console.log(
      `maxConnections=3: the 4th connection got "${extra.messages[0]?.error?.message}"; after one left, a new client was served`,
    );
  });
});
