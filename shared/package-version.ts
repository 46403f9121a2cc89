/** The package's version, from the `package.json` two levels above this module's directory. */
import { readFileSync } from 'node:fs';

/**
 * The version in `package.json`. Resolved from this module (dist/shared/, or a chunk of
 * dist/bundle/): both sit two levels below the package root.
 */
export function packageVersion(): string {
  const file = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
