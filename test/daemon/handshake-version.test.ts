/**
 * Handshake errors name their cause (issue 26.10), on a raw socket as a client in another language
 * sends them: a protocolVersion the daemon does not speak is PROTOCOL_VERSION_MISMATCH with the
 * versions it does; a malformed initialize names the field; the connection is closed after either.
 */
import { describe, expect, it } from 'vitest';
import { rawConnect, readTestToken } from '../helpers/raw.js';
import { startDaemon } from '../helpers/daemon.js';

describe('initialize refusals', { timeout: 60_000 }, () => {
  it('a protocolVersion mismatch is its own error, with the supported versions, then the close', async () => {
    const daemon = await startDaemon();
    const raw = await rawConnect(daemon.socketPath);
    const answer = await raw.request('initialize', {
      protocolVersion: 2,
      token: readTestToken(daemon.stateDir),
      client: { name: 'future' },
    });
    expect(answer?.error).toEqual({
      code: -32030,
      message: 'protocolVersion 2 is not spoken by this daemon; it speaks 1',
      data: { code: 'PROTOCOL_VERSION_MISMATCH', supportedVersions: [1] },
    });
    await raw.closed;
  });

  it('a malformed initialize names the field instead of a generic refusal', async () => {
    const daemon = await startDaemon();
    const raw = await rawConnect(daemon.socketPath);
    const answer = await raw.request('initialize', { protocolVersion: 1, token: 42, client: { name: 'x' } });
    expect(answer?.error?.data?.code).toBe('UNAUTHORIZED');
    expect(answer?.error?.message).toMatch(/^initialize refused: token must be a string/);
    await raw.closed;
    const wrong = await rawConnect(daemon.socketPath);
    const refused = await wrong.request('initialize', { protocolVersion: 1, token: 'nope', client: { name: 'x' } });
    expect(refused?.error?.message).toBe('wrong token (the daemon token is in <stateDir>/token)');
  });
});
