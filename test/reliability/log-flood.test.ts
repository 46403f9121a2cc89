/**
 * Unauthenticated peers cannot fill the disk through the log (issue 27, point 17): the warnings
 * of refused connections are rate-limited and summed up, and the log file rotates at
 * `logMaxBytes`, keeping `logMaxFiles` old ones.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { ConfigSet, DaemonStatus } from '../../protocol/methods.js';
import { cliWorld } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

/** Opens a connection and resolves when the daemon closed it. */
function refusedConnection(socketPath: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = netConnect(socketPath);
    socket.on('error', () => resolve());
    socket.on('data', () => {});
    socket.once('close', () => resolve());
  });
}

describe('the log under a flood of strangers', () => {
  it('2,000 refused connections write a handful of lines and a summary, and the file rotates at logMaxBytes', async () => {
    // Detached: the daemon logs to <stateDir>/execd.log, the file that must stay bounded.
    const world = cliWorld();
    const started = await world.run([
      'serve',
      '--detach',
      ...['--config', 'maxConnections=2', '--config', 'logMaxBytes=20000', '--config', 'logMaxFiles=2'],
    ]);
    expect(started.code).toBe(0);
    const logged = { socketPath: world.socketPath };
    const logDir = world.stateDir;
    const logFile = join(logDir, 'execd.log');
    const holder = await connect({
      socketPath: world.socketPath,
      stateDir: world.stateDir,
      clientName: 'test',
      admin: true,
    });
    onTestFinished(() => holder.close());
    await holder.call(DaemonStatus, {});
    const holder2 = await connect({ socketPath: world.socketPath, stateDir: world.stateDir, clientName: 'test' });
    onTestFinished(() => holder2.close());
    await holder2.call(DaemonStatus, {});
    for (let round = 0; round < 20; round++) {
      await Promise.all(Array.from({ length: 100 }, () => refusedConnection(logged.socketPath)));
    }
    const lines = () =>
      readdirSync(logDir)
        .filter((name) => name.startsWith('execd.log'))
        .flatMap((name) => readFileSync(join(logDir, name), 'utf8').split('\n'));
    const refusedLines = lines().filter((line) => line.includes('"msg":"connection refused"')).length;
    console.log(`2000 refused connections: ${refusedLines} "connection refused" lines written`);
    expect(refusedLines).toBeLessThanOrEqual(10);
    await waitFor(() => lines().some((line) => line.includes('"msg":"peer warnings left out"')), 'the summary line', {
      timeoutMs: 30_000,
    });
    const summary = lines().find((line) => line.includes('"msg":"peer warnings left out"'))!;
    const counts = (JSON.parse(summary) as { suppressed: Record<string, number> }).suppressed;
    expect(counts['connection refused']).toBeGreaterThan(100);

    // Rotation: lines the daemon writes for its own work (here, configuration changes) pass 20 kB.
    for (let i = 0; i < 400; i++) await holder.call(ConfigSet, { patch: { graceMs: 1000 + i } });
    const files = readdirSync(logDir)
      .filter((name) => name.startsWith('execd.log'))
      .sort();
    const sizes = files.map((name) => statSync(join(logDir, name)).size);
    console.log(
      `log files after 400 configuration changes: ${files.map((name, i) => `${name}=${sizes[i]}`).join(', ')}`,
    );
    expect(files).toEqual(['execd.log', 'execd.log.1', 'execd.log.2']);
    expect(existsSync(`${logFile}.3`)).toBe(false);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(20_000);
  });
});
