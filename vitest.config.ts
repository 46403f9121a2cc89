import { defineConfig } from 'vitest/config';

/** Set by `npm run coverage`: the daemons and CLIs the tests start write their V8 coverage there. */
const childCoverageDir = process.env.EXECD_CHILD_V8_COVERAGE;

/** The one test that changes the host's mount table (test/remote/container.test.ts). */
const CONTAINER_TEST = 'test/remote/container.test.ts';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Integration tests start real daemons and real processes: two files at a time on 2 cores.
    maxWorkers: 2,
    env: childCoverageDir ? { NODE_V8_COVERAGE: childCoverageDir } : {},
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: [CONTAINER_TEST] } },
      // Last and alone: podman mounts and removes overlays on the host while it runs, and a bwrap
      // start that meets a mount going away fails before its command runs (docs/sandbox.md); the
      // daemon starts a run or job again, up to three times, but a terminal's shell just ends.
      { extends: true, test: { name: 'container', include: [CONTAINER_TEST], sequence: { groupOrder: 1 } } },
    ],
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
