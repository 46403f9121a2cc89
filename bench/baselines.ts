/** The in-process baselines the daemon is measured against: the same work, without the hop. */
import { spawn } from 'node:child_process';
import { execa } from 'execa';

/** Output of a baseline run. */
export interface BaselineResult {
  stdout: string;
  exitCode: number | null;
}

/** `child_process.spawn('bash', ['-c', command])` with default (piped) stdio, until it closes. */
export function spawnBash(command: string): Promise<BaselineResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command]);
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', (exitCode) => resolve({ stdout: Buffer.concat(chunks).toString('utf8'), exitCode }));
  });
}

/** `execa('bash', ['-c', command])` with its defaults. */
export async function execaBash(command: string): Promise<BaselineResult> {
  const result = await execa('bash', ['-c', command], { reject: false, stripFinalNewline: false });
  return { stdout: result.stdout, exitCode: result.exitCode ?? null };
}
