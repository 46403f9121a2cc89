/**
 * `DSH_HOME` reaches every command of a tool session: the session's fact, else the tool options',
 * else `$DSH_HOME` of the harness process, else `~/.dsh`.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createShellTools, resolveDshHome } from '../../../client/tool/index.js';
import { SessionOpen } from '../../../protocol/methods.js';
import { startDaemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';

describe('resolveDshHome', () => {
  it('takes the session fact, then the configured one, then $DSH_HOME, then ~/.dsh', () => {
    const env = { DSH_HOME: '/from/env' };
    expect(resolveDshHome({ session: { dshHome: '/s', dshEnv: { DSH_HOME: '/d' } }, configured: '/c', env })).toBe(
      '/s',
    );
    expect(resolveDshHome({ session: { dshEnv: { DSH_HOME: '/d' } }, configured: '/c', env })).toBe('/d');
    expect(resolveDshHome({ session: {}, configured: '/c', env })).toBe('/c');
    expect(resolveDshHome({ env })).toBe('/from/env');
    expect(resolveDshHome({ env: {}, home: '/home/u' })).toBe('/home/u/.dsh');
    expect(resolveDshHome({ configured: './relative-home', env: {} })).toBe(resolve('./relative-home'));
    expect(resolveDshHome({ env: { DSH_HOME: '' }, configured: '', home: '/home/u' })).toBe('/home/u/.dsh');
  });
});

describe('DSH_HOME through a real daemon', () => {
  const command = { command: 'echo "$DSH_HOME"', description: 'Show the harness home' };

  it('gives every command the configured, the session or the default DSH_HOME', async () => {
    const daemon = await startDaemon();
    const saved = process.env.DSH_HOME;
    onTestFinished(() => {
      if (saved === undefined) delete process.env.DSH_HOME;
      else process.env.DSH_HOME = saved;
    });

    const configured = await createShellTools({
      client: await daemon.connect(),
      session: { id: 'configured', cwd: daemon.dir },
      dshHome: '/srv/harness-home',
    });
    expect(configured.dshHome).toBe('/srv/harness-home');
    expect((await configured.shell.execute(command)).text).toBe('/srv/harness-home\n');

    const fact = await createShellTools({
      client: await daemon.connect(),
      session: { id: 'fact', cwd: daemon.dir, dshHome: '/home/agent/.dsh-custom' },
      dshHome: '/srv/harness-home',
    });
    expect((await fact.shell.execute(command)).text).toBe('/home/agent/.dsh-custom\n');

    process.env.DSH_HOME = '/from/the/harness/env';
    const inherited = await createShellTools({
      client: await daemon.connect(),
      session: { id: 'env', cwd: daemon.dir },
    });
    expect((await inherited.shell.execute(command)).text).toBe('/from/the/harness/env\n');

    delete process.env.DSH_HOME;
    const defaulted = await createShellTools({
      client: await daemon.connect(),
      session: { id: 'dflt', cwd: daemon.dir },
    });
    expect((await defaulted.shell.execute(command)).text).toBe(`${join(homedir(), '.dsh')}\n`);
    const job = await defaulted.shell.execute({ ...command, run_in_background: true });
    const jobId = (job.details as { jobId: string }).jobId;
    let output = '';
    await waitFor(async () => {
      output += (await defaulted.jobOutput!.execute({ job_id: jobId })).text;
      return output.includes(`[job ${jobId}: completed]`);
    }, 'the background job to complete');
    expect(output).toContain(`${join(homedir(), '.dsh')}\n`);
  });

  it('a session the harness opened itself, or reopened by someone else, still gets it on every command', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 'own', cwd: daemon.dir });
    const tools = await createShellTools({ client, session: { id: 'own' }, dshHome: '/srv/h' });
    expect((await tools.shell.execute(command)).text).toBe('/srv/h\n');
    // Another client reopens the session with other facts (as `execd run --session own` would).
    const other = await daemon.connect();
    await other.call(SessionOpen, { sessionId: 'own', cwd: daemon.dir });
    expect((await tools.shell.execute(command)).text).toBe('/srv/h\n');
  });
});
