// Bundles web/src into web/dist (index.html, app.js, app.css) with esbuild.
//   node build.mjs          minified production build (what `make web` runs)
//   node build.mjs --dev    readable build with inline source maps
// dist/README.txt is kept; every other file in dist is replaced.

import { createHash } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = dirname(fileURLToPath(import.meta.url));
const src = join(root, 'src');
const dist = join(root, 'dist');
const dev = process.argv.includes('--dev');

for (const name of await readdir(dist).catch(() => [])) {
  if (name !== 'README.txt') await rm(join(dist, name), { recursive: true, force: true });
}

const result = await esbuild.build({
  entryPoints: { app: join(src, 'main.ts') },
  outdir: dist,
  bundle: true,
  format: 'iife',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  minify: !dev,
  sourcemap: dev ? 'inline' : false,
  legalComments: 'eof',
  logLevel: 'warning',
  metafile: true,
  define: { 'process.env.NODE_ENV': dev ? '"development"' : '"production"' },
}).catch(() => process.exit(1)); // esbuild has printed the errors

// Cache-bust the two assets by their content, so a rebuilt binary is never served
// with a stale app.js from a browser cache.
const hash = createHash('sha256');
for (const f of ['app.js', 'app.css']) hash.update(await readFile(join(dist, f)));
const build = hash.digest('hex').slice(0, 12);
const html = (await readFile(join(src, 'index.html'), 'utf8')).replaceAll('__BUILD__', build);
await writeFile(join(dist, 'index.html'), html);

const sizes = Object.entries(result.metafile.outputs)
  .map(([f, o]) => `${f.split('/').pop()} ${(o.bytes / 1024).toFixed(0)} KiB`)
  .join(', ');
console.log(`web: built dist/ (${sizes}, build ${build}${dev ? ', dev' : ''})`);
