/**
 * The effective resource limits (docs/limits.md), computed once per session and per command: a session's
 * are its own, else `defaultLimits`, each at most `maxLimits`; `session/update` and a request may
 * only lower them; a limit the cgroups here cannot enforce is `LIMIT_UNAVAILABLE`, or dropped with
 * `limitsOptional`. Pure: the configuration and what is enforceable are passed in.
 */
import type { Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import { LIMIT_NAMES, type LimitName, type SessionLimits, type UnitLimits } from '../../protocol/limits.js';

/** What the daemon can enforce, and why not the rest. */
export interface Enforceable {
  enforces: readonly LimitName[];
  unavailable?: string;
}

/** The limits a request may name (a session total is the session's alone). */
const UNIT_NAMES = ['memoryBytes', 'cpus', 'pids'] as const;

/** The limits that are set, in `LIMIT_NAMES` order. */
function setNames(limits: SessionLimits): LimitName[] {
  return LIMIT_NAMES.filter((name) => limits[name] !== undefined);
}

/** LIMIT_EXCEEDED naming the first limit above `maxLimits`, if any. */
function aboveMax(limits: SessionLimits, config: Config, field: string): ExecdError | undefined {
  const max = config.maxLimits;
  if (!max) return undefined;
  for (const name of setNames(limits)) {
    const ceiling = max[name];
    if (ceiling !== undefined && limits[name]! > ceiling) {
      return new ExecdError(
        'LIMIT_EXCEEDED',
        `${field}.${name} ${limits[name]} is above maxLimits.${name} (${ceiling})`,
      );
    }
  }
  return undefined;
}

/**
 * `limits` without those that cannot be enforced here: LIMIT_UNAVAILABLE naming them, unless
 * `limitsOptional` (then they are dropped: the daemon's operator chose best effort).
 */
function enforceable(
  limits: SessionLimits,
  can: Enforceable,
  config: Config,
  field: string,
): SessionLimits | ExecdError {
  const missing = setNames(limits).filter((name) => !can.enforces.includes(name));
  if (missing.length === 0) return limits;
  if (!config.limitsOptional) {
    const why = can.unavailable ? `: ${can.unavailable}` : '';
    return new ExecdError(
      'LIMIT_UNAVAILABLE',
      `${missing.map((name) => `${field}.${name}`).join(', ')} cannot be enforced here${why} ` +
        `(enforced: ${can.enforces.length > 0 ? can.enforces.join(', ') : 'none'}; limitsOptional is false)`,
    );
  }
  const kept: SessionLimits = {};
  for (const name of setNames(limits)) if (can.enforces.includes(name)) kept[name] = limits[name];
  return kept;
}

/** A session's limits at `session/open`: its own, else `defaultLimits`, field by field. */
export function openLimits(
  asked: SessionLimits | undefined,
  config: Config,
  can: Enforceable,
): SessionLimits | ExecdError {
  const limits: SessionLimits = { ...config.defaultLimits, ...definedOf(asked) };
  return aboveMax(limits, config, 'limits') ?? enforceable(limits, can, config, 'limits');
}

/**
 * A session's limits after `session/update`: each named limit replaces the session's when it is
 * not higher (a limit the session did not have is new, up to `maxLimits`); a higher one is
 * FORBIDDEN, naming it.
 */
export function lowerLimits(
  current: SessionLimits | undefined,
  update: SessionLimits | undefined,
  config: Config,
  can: Enforceable,
  sessionId: string,
): SessionLimits | ExecdError {
  const asked = definedOf(update);
  for (const name of setNames(asked)) {
    const has = current?.[name];
    if (has !== undefined && asked[name]! > has) {
      return new ExecdError(
        'FORBIDDEN',
        `session ${sessionId}: limits.${name} may only be lowered (has ${has}, asked ${asked[name]})`,
      );
    }
  }
  const refused = aboveMax(asked, config, 'limits') ?? enforceable(asked, can, config, 'limits');
  if (refused instanceof ExecdError) return refused;
  return { ...current, ...refused };
}

/**
 * A command's effective limits: the session's, each lowered by the request's. A request above its
 * session's limit (or, where the session has none, above `maxLimits`) is LIMIT_EXCEEDED naming it.
 * The session's `sessionMemoryBytes` is carried along (the unit's cgroup lies below the session's).
 * Undefined when the command runs without limits.
 */
export function unitLimits(
  session: SessionLimits | undefined,
  requested: UnitLimits | undefined,
  config: Config,
  can: Enforceable,
): SessionLimits | undefined | ExecdError {
  const asked = definedOf(requested);
  for (const name of UNIT_NAMES) {
    const has = session?.[name];
    if (asked[name] !== undefined && has !== undefined && asked[name] > has) {
      return new ExecdError(
        'LIMIT_EXCEEDED',
        `limits.${name} ${asked[name]} is above the session's (${has}): a request may only lower its session's limits`,
      );
    }
  }
  const refused = aboveMax(asked, config, 'limits') ?? enforceable(asked, can, config, 'limits');
  if (refused instanceof ExecdError) return refused;
  const limits: SessionLimits = { ...session, ...refused };
  return setNames(limits).length === 0 ? undefined : limits;
}

/** The fields that are set (an explicit `undefined` must not override a default). */
function definedOf(limits: SessionLimits | undefined): SessionLimits {
  const out: SessionLimits = {};
  for (const name of LIMIT_NAMES) if (limits?.[name] !== undefined) out[name] = limits[name];
  return out;
}

/** Two sets of limits are the same (for a re-open's comparison of facts). */
export function sameLimits(a: SessionLimits | undefined, b: SessionLimits | undefined): boolean {
  return LIMIT_NAMES.every((name) => a?.[name] === b?.[name]);
}

/** A session's limits as a fact line: `memoryBytes=536870912, pids=64`, or `none`. */
export function describeLimits(limits: SessionLimits | undefined): string {
  const names = limits ? setNames(limits) : [];
  return names.length === 0 ? 'none' : names.map((name) => `${name}=${limits![name]}`).join(', ');
}
