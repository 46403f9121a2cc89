/**
 * The child's environment (SPEC §1.4): pure functions, built in one order, later wins.
 */

/**
 * Names that look like credentials; their values never reach a child from the daemon's env. At
 * least the seam's `/KEY|PASSWORD|SECRET|TOKEN/i` (so `OPENAI_KEY`, `PEER_SIGNING_KEY`), plus
 * `PASSWD` and `CREDENTIAL`; `KEY` already covers `API_KEY`, `APIKEY`, `ACCESS_KEY`, `PRIVATE_KEY`.
 */
const CREDENTIAL_NAME = /KEY|PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL/i;

/** Prefixes whose inherited variables never reach a child, whatever their case (`dsh_x` too). */
const SCRUBBED_PREFIX = /^(?:DSH_|EXECD_)/i;

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
 * every inherited `DSH_*` variable (prefixes matched case-insensitively).
 */
export function scrubEnv(env: NodeJS.ProcessEnv): EnvMap {
  const out: EnvMap = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isCredentialName(name) || SCRUBBED_PREFIX.test(name)) continue;
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
