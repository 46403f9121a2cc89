/**
 * `npm run bench` (SPEC §8): execd against the physical limits, measured side by side in the same
 * run, printed as ratios. A measurement, never a test: it always exits 0 unless it crashed.
 */
import { benchLatency } from './b1-latency.js';
import { benchLatencyTls } from './b1-tls.js';
import { benchFiles } from './b11-files.js';
import { benchConfinedTls } from './b12-confined-tls.js';
import { benchTrees } from './b13-trees.js';
import { benchSpill, SPILL_CONFIG } from './b2-spill.js';
import { benchConcurrency } from './b3-concurrency.js';
import { benchConcurrencyLandlock } from './b3-landlock.js';
import { benchJobs } from './b4-jobs.js';
import { benchCli } from './b5-cli.js';
import { benchTerminalLatency } from './b6-terminal-latency.js';
import { benchStdinRead } from './b7-stdin-read.js';
import { benchTerminalRss } from './b8-terminal-rss.js';
import { benchColdStart } from './b9-cold-start.js';
import { benchFootprint } from './b10-footprint.js';
import { benchReadiness } from './probe-readiness.js';
import { benchLimits } from './b1-limits.js';
import { benchSandbox } from './b1-sandbox.js';
import { runCleanups } from './cleanup.js';
import { startBenchDaemon, type BenchDaemon } from './daemon.js';
import { readMemory } from './proc-stats.js';
import { formatFigure, formatSummary, type Figure } from './stats.js';

/** Every measured figure, in the table's order. */
const BENCHES: ReadonlyArray<[string, (daemon: BenchDaemon) => Promise<Figure[]>]> = [
  ['B1', benchLatency],
  ['B1TLS', benchLatencyTls],
  ['B2', benchSpill],
  ['B3', benchConcurrency],
  ['B3LANDLOCK', benchConcurrencyLandlock],
  ['B4', benchJobs],
  ['B5', benchCli],
  ['B6', benchTerminalLatency],
  ['B7', benchStdinRead],
  ['B8', benchTerminalRss],
  ['B1SANDBOX', benchSandbox],
  ['B1LIMITS', benchLimits],
  ['B9', benchColdStart],
  ['B10', benchFootprint],
  ['B11', benchFiles],
  ['B12', benchConfinedTls],
  ['B13', benchTrees],
  ['PROBE', () => benchReadiness()],
];

/** `npm run bench -- B6 B7 B8` measures only those figures (for profiling one of them). */
const only = process.argv.slice(2).map((id) => id.toUpperCase());

async function main(): Promise<void> {
  const started = performance.now();
  const daemon = await startBenchDaemon(SPILL_CONFIG);
  const figures: Figure[] = [];
  try {
    for (const [id, bench] of BENCHES) {
      if (only.length > 0 && !only.includes(id)) continue;
      for (const figure of await bench(daemon)) {
        figures.push(figure);
        process.stdout.write(`${formatFigure(figure)}\n`);
      }
    }
    const memory = readMemory(daemon.pid);
    process.stdout.write(
      `daemon RSS now ${(memory.rss / 2 ** 20).toFixed(1)} MB, peak ${(memory.peak / 2 ** 20).toFixed(1)} MB; bench took ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
    );
  } finally {
    await daemon.stop();
  }
  process.stdout.write(`${formatSummary(figures)}\n`);
}

main().then(
  () => runCleanups(),
  (error: unknown) => {
    runCleanups();
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
