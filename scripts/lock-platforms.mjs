#!/usr/bin/env node
// The registry these machines reach serves only the linux builds of msgpackr-extract (an
// optional native speed-up of bullmq's msgpackr), so `npm install` leaves the other
// platforms' optional packages out of package-lock.json and `npm ci` then refuses the
// lockfile as out of sync. This puts their entries back (os/cpu only: npm skips them on
// other platforms without fetching). Run it after any `npm install` that rewrites the lock.
import { readFileSync, writeFileSync } from 'node:fs';

const PLATFORMS = {
  'darwin-arm64': [['darwin'], ['arm64']],
  'darwin-x64': [['darwin'], ['x64']],
  'linux-arm': [['linux'], ['arm']],
  'linux-arm64': [['linux'], ['arm64']],
  'linux-x64': [['linux'], ['x64']],
  'win32-x64': [['win32'], ['x64']],
};

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const parent = lock.packages['node_modules/msgpackr-extract'];
if (!parent) process.exit(0);
let added = 0;
for (const [name, version] of Object.entries(parent.optionalDependencies ?? {})) {
  const path = `node_modules/${name}`;
  if (lock.packages[path]) continue;
  const platform = PLATFORMS[name.replace('@msgpackr-extract/msgpackr-extract-', '')];
  if (!platform) continue;
  lock.packages[path] = {
    version,
    cpu: platform[1],
    license: 'MIT',
    optional: true,
    os: platform[0],
  };
  added++;
}
// npm's own order, so the rewrite changes nothing but the restored entries.
const entries = Object.entries(lock.packages).sort(([a], [b]) => a.localeCompare(b, 'en'));
lock.packages = Object.fromEntries(entries);
writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
console.log(`lock-platforms: ${added} platform entr${added === 1 ? 'y' : 'ies'} restored`);
