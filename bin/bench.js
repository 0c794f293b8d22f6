#!/usr/bin/env node
// `npm run bench -- <suite>`: the benchmark suites in bench/. A development tool (bench/ is
// not in the package), so it always runs the TypeScript sources through tsx; the suites that
// time compiled code (startup) build and run dist/ themselves.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../bench/main.ts');
await main(process.argv.slice(2));
