/**
 * The child's environment (docs/sessions.md): pure functions, built in one order, later wins.
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
 * The password of a URL's userinfo (`scheme://user:password@host`), anywhere in a value: a
 * `DATABASE_URL` or a proxy setting carries one under a name that says nothing of it. The
 * scheme starts with a letter; the userinfo holds no `/`, `@` or whitespace.
 */
const URL_PASSWORD = /([A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/:@]*:)[^\s/@]+@/g;

/** What a scrubbed URL password reads. */
export const SCRUBBED_PASSWORD = '***';

/** The value with every URL password replaced by `***` (the user name and host stay). */
export function scrubUrlPasswords(value: string): string {
  return value.replace(URL_PASSWORD, `$1${SCRUBBED_PASSWORD}@`);
}

/**
 * Names a clean base environment (`serve --clean-env`) keeps from the daemon's own: who the user
 * is, where home and temp are, the locale and time zone — nothing of the shell or project that
 * happened to start the daemon (`VIRTUAL_ENV`, a `PATH` with its `bin`, custom variables).
 */
const CLEAN_ENV_NAMES = /^(?:HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_[A-Z]+|TZ|TMPDIR|XDG_RUNTIME_DIR)$/;

/** The `PATH` of a clean base environment. */
export const CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The daemon's own environment minus credential-shaped names, the daemon's `EXECD_*` variables and
 * every inherited `DSH_*` variable (prefixes matched case-insensitively).
 */
export function scrubEnv(env: NodeJS.ProcessEnv): EnvMap {
  const out: EnvMap = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isCredentialName(name) || SCRUBBED_PREFIX.test(name)) continue;
    out[name] = scrubUrlPasswords(value);
  }
  return out;
}

/**
 * The base every command's environment starts from (docs/sessions.md, layer 1): the daemon's own,
 * scrubbed; with `clean`, only the user, home, temp, locale and time-zone variables of it and the
 * system `PATH`, so a daemon auto-started from one project's shell passes nothing of it on.
 */
export function baseEnvironment(env: NodeJS.ProcessEnv, clean: boolean): EnvMap {
  const scrubbed = scrubEnv(env);
  if (!clean) return scrubbed;
  const out: EnvMap = { PATH: CLEAN_PATH };
  for (const [name, value] of Object.entries(scrubbed)) if (CLEAN_ENV_NAMES.test(name)) out[name] = value;
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

/**
 * `env` with `extra`'s variables set over it, as a new map: what `{ ...env, ...extra }` gives, key
 * order included. Built from entries, not by that spread: V8 gives each object that is spread from
 * an environment-sized one and then gets one more variable a hidden class of its own (a map and its
 * descriptors, in the old generation), so a marker added to every command left the daemon 1.8 MB
 * larger after a burst of 220 commands (docs/performance.md#footprint).
 */
export function withVariables(env: EnvMap, extra: EnvMap): EnvMap {
  return Object.fromEntries([...Object.entries(env), ...Object.entries(extra)]);
}

/** A copy with credential-shaped values masked, for replies and logs. */
export function maskEnv(env: EnvMap): EnvMap {
  const out: EnvMap = {};
  for (const [name, value] of Object.entries(env))
    out[name] = isCredentialName(name) ? '***' : scrubUrlPasswords(value);
  return out;
}
