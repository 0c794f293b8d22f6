#!/usr/bin/env node
// The `svc` command. Installed from the package, it runs the compiled JavaScript in dist/.
// In a development checkout (the TypeScript sources sit beside this file) it runs the sources
// through tsx, a devDependency: no build step before `npm start`, and a dist/ left by an
// earlier build never shadows an edit. SVC_RUNTIME=dist or SVC_RUNTIME=source overrides.
import { runtime } from './runtime.js';

const { main } = await runtime('cli/main');
await main(process.argv);
