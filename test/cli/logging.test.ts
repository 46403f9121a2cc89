/**
 * The detached daemon's log (SPEC §4): JSON lines in <stateDir>/execd.log with every request at
 * debug level — and never command output, environment values or the token.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';

describe('daemon log', { timeout: 180_000 }, () => {
  it('logs requests at debug level, jobs at info, and never output, env values or the token', async () => {
    const envValue = 'plain-env-value-7f3a91';
    const credential = 'credential-value-9c1e55';
    const world = cliWorld({ env: { EXECD_LOG_LEVEL: 'debug', PLAIN_VALUE: envValue, MY_SECRET_TOKEN: credential } });
    // Printed only at run time: the command text does not contain it.
    const outputSecret = 'outsecret-5d2b17';
    const run = await world.run([
      'run',
      '--',
      `echo "$PLAIN_VALUE"; printf '%s%s\\n' outsec ret-5d2b17; echo err-"$PLAIN_VALUE" >&2`,
    ]);
    expect(run).toMatchObject({ code: 0, stdout: `${envValue}\n${outputSecret}\n`, stderr: `err-${envValue}\n` });
    expect((await world.run(['run', '--json', '--', 'echo "$MY_SECRET_TOKEN"'])).stdout).toContain('"text": "\\n"');
    const job = (
      await world.run(['start', '--', `echo "$PLAIN_VALUE"; printf '%s%s\\n' outsec ret-5d2b17`])
    ).stdout.trim();
    expect(await world.run(['read', '--follow', job])).toMatchObject({
      code: 0,
      stdout: `${envValue}\n${outputSecret}\n`,
    });
    expect((await world.run(['config', 'set', 'timeoutMs=60000'])).code).toBe(0);
    expect((await world.run(['status'])).code).toBe(0);
    const token = readFileSync(join(world.stateDir, 'token'), 'utf8').trim();
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect((await world.run(['stop'])).code).toBe(0);

    const log = readFileSync(join(world.stateDir, 'execd.log'), 'utf8');
    const lines = log
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; msg: string; method?: string; ms?: number });
    const requests = lines.filter((line) => line.msg === 'request');
    expect(requests.every((line) => line.level === 20 && typeof line.ms === 'number')).toBe(true);
    expect(requests.map((line) => line.method)).toEqual(
      expect.arrayContaining([
        'initialize',
        'session/open',
        'shell/run',
        'shell/start',
        'job/read',
        'config/set',
        'daemon/status',
        'daemon/shutdown',
      ]),
    );
    // Job starts and settlements at info level.
    expect(lines.filter((line) => line.level === 30).map((line) => line.msg)).toEqual(
      expect.arrayContaining(['job started', 'job settled']),
    );
    for (const secret of [envValue, credential, outputSecret, token]) expect(log).not.toContain(secret);
  });
});
