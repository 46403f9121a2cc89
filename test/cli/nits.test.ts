/**
 * What a new user of the CLI met (issue 26.14): error lines name the subcommand, `clean` gives one
 * size form, `start --help` speaks of `start`, and a second `serve --detach` exits 0 saying a
 * daemon already runs.
 */
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';

describe('execd CLI messages', { timeout: 120_000 }, () => {
  it('a failure names its subcommand: execd kill: … bash-99', async () => {
    const world = cliWorld();
    // The session exists (a look never creates one): the failure is about the job.
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    const kill = await world.run(['kill', 'bash-99']);
    expect(kill.code).toBe(125);
    expect(kill.stderr).toMatch(/^execd kill: .*bash-99.*\n$/);
    const wait = await world.run(['wait', 'bash-99']);
    expect(wait.stderr).toMatch(/^execd wait: .*bash-99.*\n$/);
  });

  it('start --help shows start in its examples, run --help shows run', async () => {
    const world = cliWorld();
    const start = (await world.run(['start', '--help'])).stdout;
    expect(start).toContain("execd start -- 'ls -l | head'");
    expect(start).not.toMatch(/execd run/);
    expect((await world.run(['run', '--help'])).stdout).toContain("execd run -- 'ls -l | head'");
  });

  it('clean says how much it freed in one form', async () => {
    const world = cliWorld();
    const job = (await world.run(['start', '--', 'printf 12345'])).stdout.trim();
    expect((await world.run(['wait', job])).code).toBe(0);
    expect((await world.run(['clean'])).stdout).toBe('released 1 job, freed 5 bytes\n');
  });

  it('a repeated serve --detach exits 0 and says the daemon already runs', async () => {
    const world = cliWorld();
    const first = await world.run(['serve', '--detach']);
    expect(first.code).toBe(0);
    const [pid] = world.daemonPids();
    const again = await world.run(['serve', '--detach']);
    expect(again).toMatchObject({
      code: 0,
      stdout: `execd daemon already running (pid ${pid}) on ${world.socketPath}; nothing started\n`,
    });
    expect(world.daemonPids()).toEqual([pid]);
  });

  it('execd jobs with no daemon and no journal lists nothing without starting one', async () => {
    const world = cliWorld();
    expect(await world.run(['jobs'])).toMatchObject({ code: 0, stdout: 'no jobs in session cli\n' });
    expect(await world.run(['jobs', '--json'])).toMatchObject({ code: 0, stdout: '[]\n' });
    expect(world.daemonPids()).toEqual([]);
    // Once a daemon has run jobs, their journal is read (by a daemon started for it).
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    const job = (await world.run(['start', '--', 'true'])).stdout.trim();
    expect((await world.run(['wait', job])).code).toBe(0);
    expect((await world.run(['stop'])).code).toBe(0);
    // The restarted daemon has the job from its journal; the session itself did not survive, so
    // the look across sessions lists it.
    expect((await world.run(['jobs', '--all'])).stdout).toContain(job);
  });

  it('execd status shows the terminals, in all and per session', async () => {
    const world = cliWorld();
    const terminal = await world.run(['term', 'open']);
    expect(terminal.code).toBe(0);
    const status = (await world.run(['status'])).stdout;
    expect(status).toMatch(/^terminals +1 running, 0 exited$/m);
    expect(status).toMatch(/^cli +\d+ +0 +1 +\//m);
  });
});
