/** `initialize`: the token handshake. */
import { timingSafeEqual } from 'node:crypto';
import { ExecdError } from '../../protocol/errors.js';
import { Initialize } from '../../protocol/methods.js';
import { PROTOCOL_VERSION, type InitializeResult } from '../../protocol/types.js';
import { handler } from '../net/handler.js';

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Handlers of the handshake. */
export const initializeHandlers = [
  handler(Initialize, async (params, { daemon, conn }): Promise<InitializeResult | ExecdError> => {
    if (!sameToken(params.token, daemon.token))
      return new ExecdError('UNAUTHORIZED', 'wrong token (the daemon token is in <stateDir>/token)');
    if (params.adminToken !== undefined && !sameToken(params.adminToken, daemon.adminToken)) {
      return new ExecdError('UNAUTHORIZED', 'wrong admin token');
    }
    conn.authed = true;
    conn.admin = params.adminToken !== undefined;
    conn.clientName = params.client.name;
    daemon.log.debug({ conn: conn.id, client: params.client.name, admin: conn.admin }, 'client authenticated');
    return {
      protocolVersion: PROTOCOL_VERSION,
      daemon: {
        version: daemon.version,
        pid: process.pid,
        platform: daemon.platform.name,
        startedAt: daemon.startedAt.toISOString(),
      },
      capabilities: {
        shell: daemon.platform.shell,
        background: daemon.config.get().enableRunInBackground,
        sandboxModes: daemon.sandbox.current.modes,
        sandbox: daemon.sandbox.current.info,
        streaming: true,
        terminals: (await daemon.terminalsUnavailable) === undefined,
        limits: daemon.processes.scopes.limitsCapability,
      },
      admin: conn.admin,
    };
  }),
];
