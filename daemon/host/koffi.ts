/**
 * koffi (the FFI behind `prctl` and Landlock), its native module loaded directly. The package's
 * entry picks the same binary but first loads its installer's tools, and with them `https`,
 * `zlib` and the TLS stack: 20–30 ms of every daemon start and of every Landlock launch, against
 * 8–12 ms for the binary alone. The entry only adds deprecated aliases around the binary's
 * exports, so where no binary matches this platform (`<platform>_<arch>`, or musl's on Linux) the
 * entry is what loads.
 */
import { createRequire } from 'node:module';
import type * as Koffi from 'koffi';

let loaded: typeof Koffi | undefined;

/** The koffi module; the first call loads it. */
export function koffi(): typeof Koffi {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const triplets = [`${process.platform}_${process.arch}`];
  if (process.platform === 'linux') triplets.push(`musl_${process.arch}`);
  for (const triplet of triplets) {
    try {
      return (loaded = require(`koffi/build/koffi/${triplet}/koffi.node`) as typeof Koffi);
    } catch {
      // Not this platform's binary (or not loadable here): the next, then the package's entry.
    }
  }
  return (loaded = require('koffi') as typeof Koffi);
}
