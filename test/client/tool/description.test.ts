/** The tool description (SPEC §3.3): what it tells the model about the managed `DSH_*` namespace. */
import { describe, expect, it } from 'vitest';
import { BASH_FLAVOR, PWSH_FLAVOR, toolDescription } from '../../../client/tool/index.js';

describe('the tool description', () => {
  it('speaks of the whole managed $DSH_* namespace, not only two names', () => {
    const text = toolDescription(BASH_FLAVOR, { background: false, escalation: false });
    const line = text.split('\n').find((candidate) => candidate.includes('DSH_'))!;
    expect(line).toBe(
      '- Every variable of the managed `$DSH_*` namespace carries a fact from the harness (e.g. `$DSH_SESSION_ID` ' +
        'the session, `$DSH_HOME` its home directory, `$DSH_SESSION_JSONL` its transcript when there is one); ' +
        'read them, do not set or export any `$DSH_*` variable yourself.',
    );
  });

  it('uses the $env: syntax for pwsh', () => {
    const text = toolDescription(PWSH_FLAVOR, { background: false, escalation: false });
    expect(text).toContain('managed `$env:DSH_*` namespace');
    expect(text).not.toMatch(/[^:]\$DSH_/);
  });
});
