import { defineConfig } from 'vitest/config';

/** Set by `npm run coverage`: the daemons and CLIs the tests start write their V8 coverage there. */
const childCoverageDir = process.env.EXECD_CHILD_V8_COVERAGE;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Integration tests start real daemons and real processes: two files at a time on 2 cores.
    maxWorkers: 2,
    env: childCoverageDir ? { NODE_V8_COVERAGE: childCoverageDir } : {},
    coverage: {
      provider: 'v8',
      include: ['daemon/**/*.ts', 'spill/**/*.ts', 'client/**/*.ts', 'protocol/**/*.ts', 'shared/**/*.ts'],
      reporter: ['json'],
      // Emptied at each start: the child processes' raw coverage (coverage/processes) lives beside it.
      reportsDirectory: 'coverage/vitest',
      reportOnFailure: true,
    },
  },
});
