/** `config/get` and `config/set`. */
import { ConfigGet, ConfigSet } from '../../protocol/methods.js';
import { requireAdmin } from '../sessions/admin.js';
import { handler } from '../net/handler.js';

/** Handlers of the configuration methods. */
export const configHandlers = [
  handler(ConfigGet, (_params, { daemon }) => daemon.config.get()),
  handler(ConfigSet, (params, { daemon, conn }) => {
    const refused = requireAdmin(conn, 'config/set');
    if (refused) return refused;
    const next = daemon.config.set(params.patch, params.persist ?? false);
    daemon.log.info({ fields: Object.keys(params.patch), persist: params.persist ?? false }, 'config changed');
    return next;
  }),
];
