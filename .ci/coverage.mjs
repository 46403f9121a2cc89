// Coverage of the whole suite, daemon processes included, printed per folder.
//
// vitest's v8 provider measures the code the test processes run themselves (unit tests import the
// .ts sources). The daemons, spawners and CLIs the integration tests start are separate processes
// running dist/: vitest.config.ts hands them NODE_V8_COVERAGE (see EXECD_CHILD_V8_COVERAGE), each
// writes its raw V8 coverage on exit, and this script merges those per script, maps them back to
// the .ts files through dist's source maps (the same converter vitest uses), and adds them to
// vitest's map. A process killed by SIGKILL writes nothing: what it ran is not counted.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import convert from 'ast-v8-to-istanbul';
import libCoverage from 'istanbul-lib-coverage';
import { parseAstAsync } from 'vitest/node';

const require = createRequire(import.meta.url);
const { mergeProcessCovs } = require('@bcoe/v8-coverage');

const root = resolve(import.meta.dirname, '..');
const FOLDERS = ['daemon', 'spill', 'client', 'protocol'];
const reportDir = join(root, 'coverage');
const rawDir = join(reportDir, 'processes');
/** A daemon file under this share of covered lines is listed. */
const LOW_LINES_PCT = 70;

function runSuite(args) {
  rmSync(reportDir, { recursive: true, force: true });
  mkdirSync(rawDir, { recursive: true });
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

function printTable(map) {
  const rows = [];
  const low = [];
  for (const folder of FOLDERS) {
    const summary = libCoverage.createCoverageSummary();
    for (const file of map.files()) {
      const rel = relative(root, file);
      if (!rel.startsWith(`${folder}/`)) continue;
      const fileSummary = map.fileCoverageFor(file).toSummary();
      summary.merge(fileSummary);
      if (folder === 'daemon' && fileSummary.lines.pct < LOW_LINES_PCT) low.push([rel, fileSummary.lines]);
    }
    rows.push([`${folder}/`, summary.lines, summary.branches]);
  }
  console.log('\n| folder | lines | branches |\n| --- | --- | --- |');
  for (const [folder, lines, branches] of rows) {
    console.log(
      `| ${folder} | ${pct(lines.covered, lines.total)} (${lines.covered}/${lines.total}) | ` +
        `${pct(branches.covered, branches.total)} (${branches.covered}/${branches.total}) |`,
    );
  }
  console.log(`\ndaemon/ files under ${LOW_LINES_PCT}% of lines:`);
  for (const [file, lines] of low.sort((a, b) => a[1].pct - b[1].pct)) {
    console.log(`  ${file}: ${pct(lines.covered, lines.total)} (${lines.covered}/${lines.total})`);
  }
}

const status = runSuite(process.argv.slice(2));
const map = libCoverage.createCoverageMap(
  endAtLineEnd(JSON.parse(readFileSync(join(reportDir, 'coverage-final.json'), 'utf8'))),
);
map.merge(await childCoverageMap());
writeFileSync(join(reportDir, 'coverage-merged.json'), JSON.stringify(map.toJSON()));
printTable(map);
process.exitCode = status;
