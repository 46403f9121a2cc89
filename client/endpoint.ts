/**
 * Where a client finds the daemon: flag, else `EXECD_SOCKET` / `EXECD_STATE_DIR`, else the platform
 * default (PROTOCOL.md).
 */
import { PLATFORM, type PlatformFacts } from '../protocol/platform.js';

/** A daemon's socket and state directory. */
export interface Endpoint {
  socketPath: string;
  stateDir: string;
}

/** Resolves the endpoint from explicit values, the environment and the platform defaults. */
export function resolveEndpoint(
  given: Partial<Endpoint> = {},
  env: NodeJS.ProcessEnv = process.env,
  platform: PlatformFacts = PLATFORM,
): Endpoint {
  const stateDir = given.stateDir ?? env.EXECD_STATE_DIR ?? platform.defaultStateDir(env);
  return { socketPath: given.socketPath ?? env.EXECD_SOCKET ?? platform.defaultSocketPath(env, stateDir), stateDir };
}
