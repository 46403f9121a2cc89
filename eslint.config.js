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
  // Plain JavaScript (this file, .ci/coverage.mjs): no type information, Node's globals.
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } },
  },
);
