/** B5: `execd run -- true` from a shell with the daemon running, vs `node -e` spawning `bash -c true`. */
import { spawn } from 'node:child_process';
import { CLI, type BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { median, type Figure } from './stats.js';

const ROUNDS = 20;

/** The baseline: a Node process that spawns `bash -c true` and waits for it. */
export const NODE_BASELINE =
  "require('node:child_process').spawn('bash', ['-c', 'true'], { stdio: 'inherit' }).on('exit', (code) => process.exit(code))";

/** Runs a process to its end with stdio ignored; throws on a non-zero exit. */
export function runProcess(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`B5: ${args.join(' ').slice(0, 80)} exited ${code}`)),
    );
  });
}

/** Measures B5: both sides are fresh Node processes; only the CLI talks to the daemon. */
export async function benchCli(daemon: BenchDaemon): Promise<Figure[]> {
  const env = daemon.cliEnv();
  const sides = [
    { name: 'cli', once: () => runProcess(process.execPath, [CLI, 'run', '--session', 'bench-b5', '--', 'true'], env) },
    { name: 'node', once: () => runProcess(process.execPath, ['-e', NODE_BASELINE], env) },
  ];
  const times = await interleave(sides, ROUNDS, 2);
  const cli = median(times.get('cli')!);
  const node = median(times.get('node')!);
  return [
    {
      label: 'B5 ratio vs node -e',
      value: cli / node,
      target: 1.5,
      comparison: 'at-most',
      note: `execd run ${cli.toFixed(1)} ms, node -e ${node.toFixed(1)} ms (medians of ${ROUNDS})`,
    },
  ];
}
