/**
 * zod, loaded on first use. Only validation needs it — the daemon's dispatch and configuration, the
 * tool's argument checks — so a client that merely imports `protocol/` (every CLI command) never
 * pays the ~100 ms zod takes to load. Schemas are therefore built by functions, never at import.
 *
 * Every zod use in execd goes through this module, so a process holds exactly one copy of zod: an
 * ESM `import 'zod'` next to this CommonJS require would load a second one, whose schemas and
 * errors do not mix with the first. Modules import zod's types only (`import type`).
 */
import { createRequire } from 'node:module';
import type { z } from 'zod';

/** The zod namespace, as `import { z } from 'zod'` gives it. */
export type Zod = typeof z;

let loaded: Zod | undefined;

/** The zod namespace; the first call loads it (synchronously, so schemas can be built anywhere). */
export function zod(): Zod {
  loaded ??= (createRequire(import.meta.url)('zod') as { z: Zod }).z;
  return loaded;
}

/** A value built from zod on first use and kept: a schema that costs nothing until it is needed. */
export function lazySchema<T>(build: (z: Zod) => T): () => T {
  let built: T | undefined;
  return () => (built ??= build(zod()));
}
