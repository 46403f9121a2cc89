/**
 * The child's environment (SPEC §1.4): pure functions, built in one order, later wins.
 */

/** Names that look like credentials; their values never reach a child from the daemon's env. */
const CREDENTIAL_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL/i;

/** Switch off colours and pagers that would garble tool output. */
export const TERMINAL_OVERRIDES: Readonly<Record<string, string>> = Object.freeze({
  NO_COLOR: '1',
  TERM: 'dumb',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
});

/** A plain environment map. */
export type EnvMap = Record<string, string>;

/** True for a variable name that looks like a credential. */
export function isCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name);
}

/**
 * The daemon's own environment minus credential-shaped names, the daemon's `EXECD_*` variables and
 * every inherited `DSH_*` variable.
 */
export function scrubEnv(env: NodeJS.ProcessEnv): EnvMap {
  const out: EnvMap = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isCredentialName(name) || name.startsWith('EXECD_') || name.startsWith('DSH_')) continue;
    out[name] = value;
  }
  return out;
}

/** The layers of one command's environment. */
export interface EnvLayers {
  /** The scrubbed daemon environment. */
  base: EnvMap;
  sessionEnv?: EnvMap;
  requestEnv?: EnvMap;
  sessionDshEnv?: EnvMap;
  requestDshEnv?: EnvMap;
  sessionId: string;
}

/** Merges the layers: base, terminal overrides, session env, request env, managed `DSH_*`. */
export function buildEnv(layers: EnvLayers): EnvMap {
  return {
    ...layers.base,
    ...TERMINAL_OVERRIDES,
    ...layers.sessionEnv,
    ...layers.requestEnv,
    ...layers.sessionDshEnv,
    ...layers.requestDshEnv,
    DSH_SESSION_ID: layers.sessionId,
    DSH_SHELL: '1',
  };
}

/** A copy with credential-shaped values masked, for replies and logs. */
export function maskEnv(env: EnvMap): EnvMap {
  const out: EnvMap = {};
  for (const [name, value] of Object.entries(env)) out[name] = isCredentialName(name) ? '***' : value;
  return out;
}
