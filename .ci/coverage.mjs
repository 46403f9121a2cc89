// Coverage of the whole suite, daemon processes included, printed per folder.
//
// vitest's v8 provider measures the code the test processes run themselves (unit tests import the
// .ts sources). The daemons, spawners and CLIs the integration tests start are separate processes
// running dist/: vitest.config.ts hands them NODE_V8_COVERAGE (see EXECD_CHILD_V8_COVERAGE), each
// writes its raw V8 coverage on exit, and this script merges those per script, maps them back to
// the .ts files through dist's source maps (the same converter vitest uses), and adds them to
// vitest's map. A process killed by SIGKILL writes nothing: what it ran is not counted.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import convert from 'ast-v8-to-istanbul';
import libCoverage from 'istanbul-lib-coverage';
import { parseAstAsync } from 'vitest/node';

const require = createRequire(import.meta.url);
const { mergeProcessCovs } = require('@bcoe/v8-coverage');

const root = resolve(import.meta.dirname, '..');
const FOLDERS = ['daemon', 'spill', 'client', 'protocol', 'shared'];
const reportDir = join(root, 'coverage');
const rawDir = join(reportDir, 'processes');
/** A daemon file under this share of covered lines is listed. */
const LOW_LINES_PCT = 70;
/** The daemon files with the fewest covered lines, listed whatever their share. */
const LOWEST_SHOWN = 8;

function runSuite(args) {
  rmSync(reportDir, { recursive: true, force: true });
  mkdirSync(rawDir, { recursive: true });
  // Tests run some processes as another user (nobody): they must be able to write theirs too.
  chmodSync(rawDir, 0o1777);
  const vitest = spawnSync(
    process.execPath,
    [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--coverage', ...args],
    { cwd: root, stdio: 'inherit', env: { ...process.env, EXECD_CHILD_V8_COVERAGE: rawDir } },
  );
  return vitest.status ?? 1;
}

/** The raw coverage of every child process, merged per dist script of the measured folders. */
function mergedChildCoverage() {
  const distUrls = FOLDERS.map((folder) => pathToFileURL(join(root, 'dist', folder)).href + '/');
  let merged = { result: [] };
  for (const name of readdirSync(rawDir)) {
    let raw;
    try {
      raw = JSON.parse(readFileSync(join(rawDir, name), 'utf8'));
    } catch {
      continue; // a file cut short by a process that died while writing it
    }
    const result = raw.result.filter((script) => distUrls.some((prefix) => script.url.startsWith(prefix)));
    merged = mergeProcessCovs([merged, { result }]);
  }
  return merged.result;
}

/**
 * The two maps come from two compilations of the same .ts (vite's for the test processes, tsc's for
 * dist/): their locations start at the same place but may end elsewhere, or at an unmapped end of
 * line (column null). Ending every location at the end of its line makes a statement or branch one
 * entry in the merged map, counted once.
 */
function endAtLineEnd(data) {
  const cut = (loc) => loc && (loc.end = { line: loc.end.line, column: null });
  for (const file of Object.values(data)) {
    Object.values(file.statementMap).forEach(cut);
    for (const fn of Object.values(file.fnMap)) [fn.loc, fn.decl].forEach(cut);
    for (const branch of Object.values(file.branchMap)) [branch.loc, ...branch.locations].forEach(cut);
  }
  return data;
}

async function childCoverageMap() {
  const map = libCoverage.createCoverageMap({});
  for (const script of mergedChildCoverage()) {
    const path = new URL(script.url).pathname;
    const code = readFileSync(path, 'utf8');
    const sourceMap = JSON.parse(readFileSync(`${path}.map`, 'utf8'));
    map.merge(endAtLineEnd(await convert({ code, sourceMap, ast: parseAstAsync(code), coverage: script })));
  }
  return map;
}

function pct(covered, total) {
  return total === 0 ? '-' : `${((100 * covered) / total).toFixed(1)}%`;
}

function folderSummary(map, folder) {
  const summary = libCoverage.createCoverageSummary();
  for (const file of map.files()) {
    if (relative(root, file).startsWith(`${folder}/`)) summary.merge(map.fileCoverageFor(file).toSummary());
  }
  return summary;
}

const cell = ({ covered, total }) => `${pct(covered, total)} (${covered}/${total})`;

function printReport(map, testsOnly) {
  console.log('\n| folder | lines | branches | lines, test processes only | branches, test processes only |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const folder of FOLDERS) {
    const all = folderSummary(map, folder);
    const own = folderSummary(testsOnly, folder);
    console.log(
      `| ${folder}/ | ${cell(all.lines)} | ${cell(all.branches)} | ${cell(own.lines)} | ${cell(own.branches)} |`,
    );
  }
  const daemonFiles = map
    .files()
    .filter((file) => relative(root, file).startsWith('daemon/'))
    .map((file) => ({ file: relative(root, file), coverage: map.fileCoverageFor(file) }))
    .sort((a, b) => a.coverage.toSummary().lines.pct - b.coverage.toSummary().lines.pct);
  const low = daemonFiles.filter(({ coverage }) => coverage.toSummary().lines.pct < LOW_LINES_PCT);
  console.log(`\ndaemon/ files under ${LOW_LINES_PCT}% of lines: ${low.length === 0 ? 'none' : low.length}`);
  console.log(`daemon/ files with the fewest covered lines (uncovered line numbers):`);
  for (const { file, coverage } of daemonFiles.slice(0, Math.max(low.length, LOWEST_SHOWN))) {
    const lines = coverage.toSummary().lines;
    console.log(`  ${file}: ${cell(lines)}; ${coverage.getUncoveredLines().join(', ')}`);
  }
}

// `--report-only`: print the report of the last run again, without running the suite.
const reportOnly = process.argv[2] === '--report-only';
const status = reportOnly ? 0 : runSuite(process.argv.slice(2));
const testsOnlyData = () =>
  endAtLineEnd(JSON.parse(readFileSync(join(reportDir, 'vitest', 'coverage-final.json'), 'utf8')));
const map = libCoverage.createCoverageMap(testsOnlyData());
map.merge(await childCoverageMap());
writeFileSync(join(reportDir, 'coverage-merged.json'), JSON.stringify(map.toJSON()));
printReport(map, libCoverage.createCoverageMap(testsOnlyData()));
process.exitCode = status;
