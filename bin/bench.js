#!/usr/bin/env node
// `npm run bench -- <suite>`: runs the benchmark suites in bench/ (TypeScript via tsx).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../bench/main.ts');
await main(process.argv.slice(2));
