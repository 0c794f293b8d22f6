#!/usr/bin/env node
// The `svc` command. The sources are TypeScript run as they are (tsx), so an installed
// checkout needs no build step before this works.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
await main(process.argv);
