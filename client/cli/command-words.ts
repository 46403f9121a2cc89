/**
 * What `execd run|start -- WORDS...` runs. One word is a script, passed to the shell as it is
 * (`execd run -- 'ls -l | head'`); several words are an argv, each word quoted so it reaches the
 * program exactly as typed (`execd run -- ls "my dir"` works like `exec ls "my dir"`).
 */

/** A word the shell would take as it is: no quoting needed. */
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One word quoted for bash: as is when plain, else in single quotes (`'` written as `'\''`). */
export function quoteBashWord(word: string): string {
  if (PLAIN_WORD.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** One word quoted for PowerShell: as is when plain, else in single quotes (`'` doubled). */
export function quotePwshWord(word: string): string {
  if (PLAIN_WORD.test(word)) return word;
  return `'${word.replace(/'/g, "''")}'`;
}

/**
 * The command line for the daemon's shell: a single word unchanged, several words quoted one by
 * one (for PowerShell behind the call operator `&`, which runs a quoted program name).
 */
export function commandFromWords(words: readonly string[], shell: 'bash' | 'pwsh' = 'bash'): string {
  if (words.length === 1) return words[0]!;
  if (shell === 'pwsh') return `& ${words.map(quotePwshWord).join(' ')}`;
  return words.map(quoteBashWord).join(' ');
}

/** Help lines explaining the two forms, in the words of subcommand `name` (`run` or `start`). */
export function commandWordsHelp(name: 'run' | 'start'): string {
  return `One word after -- is a bash script, run as it is: execd ${name} -- 'ls -l | head'.
Several words are a command and its arguments, each passed as typed (quoted for the shell):
execd ${name} -- ls "my dir" runs ls on the directory "my dir", like exec would.`;
}
