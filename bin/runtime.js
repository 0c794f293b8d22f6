// Where bin/svc.js and bin/bench.js load a module from: dist/<name>.js (compiled) or
// <name>.ts through tsx (a development checkout). See bin/svc.js.
import { existsSync } from 'node:fs';

const root = new URL('../', import.meta.url);

export function runtimeMode(name, env = process.env) {
  const forced = env.SVC_RUNTIME;
  if (forced === 'dist' || forced === 'source') return forced;
  if (forced) {
    process.stderr.write(`svc: SVC_RUNTIME is "dist" or "source", not "${forced}"\n`);
    process.exit(2);
  }
  return existsSync(new URL(`${name}.ts`, root)) ? 'source' : 'dist';
}

export async function runtime(name) {
  if (runtimeMode(name) === 'dist') {
    const compiled = new URL(`dist/${name}.js`, root);
    if (!existsSync(compiled)) {
      process.stderr.write(`svc: ${compiled.pathname} is missing: run \`npm run build\`\n`);
      process.exit(1);
    }
    return import(compiled.href);
  }
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(
      'svc: running the TypeScript sources needs tsx (a devDependency): run `npm install`,\n' +
        '     or `npm run build` and set SVC_RUNTIME=dist\n',
    );
    process.exit(1);
  }
  register();
  return import(new URL(`${name}.ts`, root).href);
}
