/**
 * The live configuration (docs/configuration.md). Sources, later wins: built-in defaults,
 * `<stateDir>/config.json`, `serve` flags, `config/set`. A bad value is refused where it is written.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import {
  configPatchSchema,
  configSchema,
  DEFAULT_CONFIG,
  mergeConfigPatch,
  type Config,
  type ConfigPatch,
} from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import { formatZodError } from '../../protocol/fields.js';

/** Validates a patch against the schema; returns the parsed patch or an INVALID_PARAMS error. */
export function parseConfigPatch(patch: unknown, source?: string): ConfigPatch | ExecdError {
  const parsed = configPatchSchema().safeParse(patch);
  if (parsed.success) return parsed.data;
  const message = formatZodError(parsed.error);
  return new ExecdError('INVALID_PARAMS', source === undefined ? message : `${source}: ${message}`);
}

/** Reads `config.json`; a missing file is an empty patch, a bad one an error naming the file. */
export function readConfigFile(path: string): ConfigPatch | ExecdError {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return {};
  }
  try {
    return parseConfigPatch(JSON.parse(text), path);
  } catch (error) {
    return new ExecdError('INVALID_PARAMS', `${path}: ${(error as Error).message}`);
  }
}

/** Holds the current configuration; every reader gets the latest at each command. */
export class ConfigStore {
  private current: Config;

  constructor(
    private readonly filePath: string,
    initial: Config = DEFAULT_CONFIG,
  ) {
    this.current = Object.freeze({ ...initial });
  }

  /** The configuration in force now. */
  get(): Config {
    return this.current;
  }

  /** Applies a validated patch; on a bad value nothing changes. */
  set(patch: unknown, persist = false): Config | ExecdError {
    const parsed = parseConfigPatch(patch);
    if (parsed instanceof ExecdError) return parsed;
    const next = configSchema().safeParse(mergeConfigPatch(this.current, parsed));
    if (!next.success) return new ExecdError('INVALID_PARAMS', formatZodError(next.error));
    if (persist) {
      const onDisk = readConfigFile(this.filePath);
      const merged = mergeConfigPatch(onDisk instanceof ExecdError ? {} : onDisk, parsed);
      const tmp = `${this.filePath}.tmp`;
      try {
        writeFileSync(tmp, `${JSON.stringify(merged, null, 2)}\n`, { mode: 0o600 });
        renameSync(tmp, this.filePath);
      } catch (error) {
        // A full disk: nothing changes, no partial temp file stays; the caller is answered the cause.
        rmSync(tmp, { force: true });
        throw error;
      }
    }
    this.current = Object.freeze(next.data);
    return this.current;
  }
}
