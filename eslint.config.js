// Type-aware lint over every TypeScript folder (sources, tests, bench, examples, vitest.config.ts).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** A remaining `eslint-disable` covers one line and says why: `// eslint-disable-next-line rule -- reason`. */
const disableWithReason = {
  meta: { type: 'suggestion', docs: { description: 'eslint-disable comments cover one line and give a reason' } },
  create(context) {
    return {
      Program() {
        for (const comment of context.sourceCode.getAllComments()) {
          const text = comment.value.trim();
          if (!text.startsWith('eslint-disable')) continue;
          if (!/^eslint-disable-(next-)?line\b/.test(text)) {
            context.report({ loc: comment.loc, message: 'disable one line only (eslint-disable-next-line)' });
          } else if (!/ -- \S/.test(text)) {
            context.report({ loc: comment.loc, message: 'say why after " -- "' });
          }
        }
      },
    };
  },
};

/**
 * Who may import whom: the client side (library, tools, MCP server, CLI) imports nothing from
 * daemon/ — the CLI's `serve` only daemon/index.ts —, the library nothing from client/cli/,
 * daemon/ imports nothing from client/, and
 * what both need lives in shared/ or protocol/, which import neither.
 */
const DAEMON = '(^|/)daemon/';
const CLIENT = '(^|/)client/';
const SHARED_HINT = 'what both sides need lives in shared/ or protocol/';
/** The rules that refuse static and dynamic imports whose path matches one of `regexes`. */
function forbid(regexes, message) {
  return forbidEach(regexes.map((regex) => [regex, message]));
}
/** The same for `[regex, message]` pairs, each refused import named with its own message. */
function forbidEach(pairs) {
  return {
    rules: {
      'no-restricted-imports': ['error', { patterns: pairs.map(([regex, message]) => ({ regex, message })) }],
      'no-restricted-syntax': [
        'error',
        ...pairs.map(([regex, message]) => ({
          selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\/')}/]`,
          message,
        })),
      ],
    },
  };
}
/** The CLI's modules, from anywhere: `./cli/…`, `../cli/…`, `…/client/cli/…`. */
const CLI = '(^|/)cli/';
const importRules = [
  {
    files: ['client/cli/**/*.ts'],
    ignores: ['client/cli/serve.ts'],
    ...forbid([DAEMON], `the client side imports nothing from daemon/; ${SHARED_HINT}`),
  },
  {
    // The library (and its tools and MCP server) stands without the CLI, which is built on it.
    files: ['client/**/*.ts'],
    ignores: ['client/cli/**'],
    ...forbidEach([
      [DAEMON, `the client side imports nothing from daemon/; ${SHARED_HINT}`],
      [CLI, 'the client library imports nothing from client/cli/; what both need lives in client/'],
    ]),
  },
  {
    files: ['client/cli/serve.ts'],
    ...forbid([`${DAEMON}(?!index\\.js$)`], '`execd serve` reaches the daemon through daemon/index.ts only'),
  },
  { files: ['daemon/**/*.ts'], ...forbid([CLIENT], `daemon/ imports nothing from client/; ${SHARED_HINT}`) },
  {
    // The handlers answer requests; what they use lives in the daemon's other folders (launching: runs/).
    files: ['daemon/**/*.ts'],
    ignores: ['daemon/handlers/**', 'daemon/server.ts'],
    ...forbidEach([
      [CLIENT, `daemon/ imports nothing from client/; ${SHARED_HINT}`],
      [
        '(^|/)handlers/',
        'only daemon/server.ts imports daemon/handlers/; what handlers share lives in a folder of its own',
      ],
    ]),
  },
  {
    files: ['shared/**/*.ts', 'protocol/**/*.ts', 'spill/**/*.ts'],
    ...forbid([DAEMON, CLIENT], 'shared/, protocol/ and spill/ import neither daemon/ nor client/'),
  },
];

export default defineConfig(
  { ignores: ['dist/', 'coverage/', 'node_modules/'] },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { execd: { rules: { 'disable-with-reason': disableWithReason } } },
    rules: { 'execd/disable-with-reason': 'error' },
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // tsconfig.test.json includes every source and test folder plus vitest.config.ts.
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: false }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/require-await': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unnecessary-condition': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      // `const { dropped: _dropped, ...rest } = x` is how the code omits a key.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // A `let` that a closure declared above reads stays a `let` (a `const` there would be a TDZ trap).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  ...importRules,
  // Plain JavaScript (this file, .ci/coverage.mjs): no type information, Node's globals.
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } },
  },
);
