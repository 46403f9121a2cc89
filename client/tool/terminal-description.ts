/**
 * What the model is told about the persistent `bash` and the terminal tools (docs/library.md): their
 * descriptions and the `tool:terminal` system-prompt section.
 */
import type { SystemPromptSection } from './types.js';

/** The persistent `bash`'s default opening sentences (the spec's text; a harness may replace them). */
export const PERSISTENT_DESCRIPTION_HEAD =
  'Run commands in a persistent bash shell. State, including the current directory and exported environment ' +
  'variables, persists across calls for this agent.';

/** The rules that follow the opening sentences: truncation, exit marker, timeout, input. */
const PERSISTENT_RULES = [
  '- `description` (required): what the command does in 5-10 words, shown to the user.',
  '- The result is what the command printed to the terminal (stdout and stderr together), or `(no output)`. ' +
    'A non-zero exit ends the result with `[exit code: N]`; no marker means exit code 0.',
  '- Long output is truncated to its tail, and the full output is saved to a file named in ' +
    '`[output truncated; full output: <path>]`: read that file instead of running the command again.',
  '- `timeoutMs`: the deployment sets the default and the maximum. A command that runs longer is interrupted ' +
    '(Ctrl-C): `[timed out after <timeoutMs>ms; interrupted, the shell kept its state]`. If it does not stop, ' +
    'it is killed and the result names it; the shell keeps its state. Only a shell that does not return to its ' +
    'prompt is reset.',
  '- A command that reads from the terminal ends with `[waiting for input: …]`; one that is still running but ' +
    'printed nothing for a while ends with `[still running: no output for <idleMs>ms; …]`. The next bash call ' +
    'is then typed into that program followed by Enter (an answer, a line for a REPL, `q` for a pager), and its ' +
    'result shows what the program printed since.',
  '- If the shell exits (`exit`, a kill), the result says `[shell exited: …]` and that the shell was reset: ' +
    'the next call starts a fresh shell in the workspace, without your earlier `cd` or variables.',
  '- Prefer non-interactive flags (`--yes`, `-y`, `git --no-pager`, `PAGER=cat`) so commands do not stop to ask.',
];

/** The persistent `bash`'s description: the (configurable) opening, then the rules. */
export function persistentDescription(head: string = PERSISTENT_DESCRIPTION_HEAD): string {
  return [head, '', ...PERSISTENT_RULES].join('\n');
}

/** The `tool:terminal` system-prompt section (docs/library.md), right after the shell tool's. */
export const TERMINAL_SYSTEM_PROMPT: SystemPromptSection = {
  name: 'tool:terminal',
  order: 106,
  text:
    'Use a terminal session only when work needs persistent terminal state or interactive stdin; prefer bash ' +
    'for bounded one-shot commands. Track every terminal session id and close sessions that no longer matter. ' +
    'A "not proven ready" or timeout result does not prove the foreground command exited.',
};

/** How the end of a send is told, shared by the descriptions. */
const READINESS =
  'The result is the output, then one line: `[ready: prompt]` (the shell is back at its prompt), `[ready: waiting ' +
  'for input]` (the program reads from the terminal), `[not proven ready: no output for <idleMs>ms]` (it may still ' +
  'be working), `[timed out after <ms>ms]`, or `[terminal exited: …]`.';

/** The description of each terminal tool. */
export const TERMINAL_TOOL_DESCRIPTIONS = {
  terminal_open:
    'Opens a terminal session (a PTY) that keeps running between calls: an interactive bash by default, or the ' +
    'program in `argv` (a REPL, a debugger, a TUI). Returns its id (e.g. `term-1`) and what it printed first. ' +
    'Terminals outlive this call; close them with terminal_close.',
  terminal_send: `Types \`text\` into a terminal, followed by Enter unless \`submit\` is false, and waits until the program is ready for more. ${READINESS}`,
  terminal_read:
    'Shows a terminal without typing anything: `view: "stream"` (default) returns what it printed since your ' +
    'last send or read, `view: "screen"` what its screen shows now (for full-screen programs such as less, top, ' +
    'vim). Ends with the terminal state line.',
  terminal_signal:
    "Sends a signal to the terminal's foreground program: SIGINT (Ctrl-C), SIGQUIT, SIGTSTP (Ctrl-Z), SIGTERM or " +
    'SIGKILL. Then use terminal_read to see what happened.',
  terminal_close:
    'Closes a terminal: its program and everything started in it are killed. Closing one that already ended does ' +
    'nothing.',
  terminal_list: "Lists this session's terminals: id, state, foreground program, working directory and name.",
} as const;
