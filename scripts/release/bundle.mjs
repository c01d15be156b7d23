// Bundles an app's compiled ESM output (apps/<app>/dist) into one CommonJS file with esbuild: the form a Node
// single-executable application needs, and what the node artifacts run with their own Node runtime. The entry
// calls the app's run() (apps/*/src/run-*.ts); top-level await is not available in CommonJS.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * @param {{ repo: string, app: 'edge'|'node', outFile: string, version: string, external?: string[] }} options
 */
export async function bundleApp({ repo, app, outFile, version, external = [] }) {
  const esbuild = await import(
    pathToFileURL(path.join(repo, '.tools/release/node_modules/esbuild/lib/main.js')).href
  );
  const runModule = path.join(repo, 'apps', app, 'dist', `run-${app}.js`);
  if (!fs.existsSync(runModule)) throw new Error(`${runModule} is missing: run 'make compile' first`);
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  const entry = [
    `import { run } from ${JSON.stringify(runModule)};`,
    'run().then(',
    '  (code) => { process.exitCode = code; },',
    `  (error) => { process.stderr.write('iop-${app}: ' + (error && error.stack ? error.stack : String(error)) + '\\n'); process.exitCode = 1; },`,
    ');',
  ].join('\n');
  const result = await esbuild.build({
    stdin: {
      contents: entry,
      resolveDir: path.dirname(runModule),
      sourcefile: `iop-${app}-entry.mjs`,
      loader: 'js',
    },
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    outfile: outFile,
    external,
    // import.meta does not exist in CommonJS: give modules that build a require from it this file's URL.
    banner: {
      js: `var __iop_import_meta_url = require('node:url').pathToFileURL(typeof __filename === 'string' ? __filename : process.execPath).href;`,
    },
    define: {
      'import.meta.url': '__iop_import_meta_url',
      'process.env.IOP_BUILD_VERSION': JSON.stringify(version),
    },
    legalComments: 'none',
    logLevel: 'silent',
    metafile: true,
  });
  const warnings = result.warnings.map((warning) => warning.text);
  return { bytes: fs.statSync(outFile).size, warnings };
}
