#!/usr/bin/env node
/**
 * The shape of a source folder, for reviews of its structure: the files at its top, its longest
 * functions, and the import loops between its subfolders.
 *
 *   node scripts/code-shape.mjs [folder=daemon] [count=5]
 *
 * A function's length is its lines from its first token to its closing brace (declarations,
 * methods, arrows and function expressions alike, nested ones counted on their own). An import
 * loop is a pair of subfolders that import each other; only imports of values count (an
 * `import type` is erased at build time and orders nothing at run time); the files at the top are
 * left out, since they wire the subfolders together.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? 'daemon');
const count = Number(process.argv[3] ?? 5);

/** Every `.ts` file below `dir`. */
function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The subfolder of `root` a file is in; '.' for one at the top. */
function folderOf(file) {
  const parts = relative(root, file).split('/');
  return parts.length > 1 ? parts[0] : '.';
}

/** Whether an import or export declaration brings in values (not only types). */
function importsValues(node) {
  if (node.isTypeOnly) return false;
  const clause = node.importClause;
  if (!clause) return true;
  if (clause.isTypeOnly) return false;
  const named = clause.namedBindings;
  if (clause.name || !named || !ts.isNamedImports(named) || named.elements.length === 0) return true;
  return named.elements.some((element) => !element.isTypeOnly);
}

/** The name a function is known by: its own, or that of what it is assigned to. */
function functionName(node) {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  return '<anonymous>';
}

const functions = [];
/** folder → folder → the imports from one to the other. */
const edges = new Map();
const files = sourceFiles(root);
for (const file of files) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const line = (position) => source.getLineAndCharacterOfPosition(position).line + 1;
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = line(node.getStart());
      functions.push({
        lines: line(node.end) - first + 1,
        name: functionName(node),
        at: `${relative('.', file)}:${first}`,
      });
    }
    const specifier = node.moduleSpecifier;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && specifier && ts.isStringLiteral(specifier)) {
      const target = resolve(dirname(file), specifier.text.replace(/\.js$/, '.ts'));
      const [from, to] = [folderOf(file), folderOf(target)];
      if (specifier.text.startsWith('.') && target.startsWith(`${root}/`) && from !== to && importsValues(node)) {
        if (!edges.has(from)) edges.set(from, new Map());
        const imports = edges.get(from);
        imports.set(to, [...(imports.get(to) ?? []), `${relative(root, file)} → ${relative(root, target)}`]);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const top = files.filter((file) => folderOf(file) === '.').map((file) => relative(root, file));
console.log(`files at the top of ${relative('.', root)}/: ${top.length} (${top.join(', ')})`);
console.log(`longest functions:`);
functions.sort((a, b) => b.lines - a.lines);
for (const fn of functions.slice(0, count)) console.log(`  ${fn.lines} lines  ${fn.name}  ${fn.at}`);
const loops = [];
for (const [from, imports] of edges) {
  for (const [to, these] of imports) {
    const back = edges.get(to)?.get(from);
    if (from < to && from !== '.' && to !== '.' && back) loops.push(`${from} ⇄ ${to}: ${these[0]}; ${back[0]}`);
  }
}
console.log(`import loops between subfolders (value imports): ${loops.length}`);
for (const loop of loops) console.log(`  ${loop}`);
