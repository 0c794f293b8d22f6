// tap coverage map. Test files that run our CLI or fixtures as child processes (through
// tsx) bring back V8 coverage whose source maps differ from tap's own transpiler; merged,
// it corrupts the whole report. Those files' coverage is left out (their code paths are
// covered in-process by the unit and integration tests); every other test counts as usual.
const CHILD_PROCESS_TESTS = [
  'test/agents/e2e/approve.test.ts',
  'test/agents/e2e/npm-start-signal.test.ts',
  'test/agents/e2e/cli.test.ts',
  'test/agents/e2e/first-hour.test.ts',
  'test/conformance/commands.test.ts',
  'test/chaos/chaos.test.ts',
  'test/conformance/sidecar-e2e.test.ts',
  'test/package/install.test.ts',
  'test/receiver/cli.test.ts',
  'test/receiver/connection-flood.test.ts',
  'test/receiver/console-token.test.ts',
  'test/receiver/public-origins.test.ts',
  'test/receiver/sidecar-startup.test.ts',
  'test/sender/cluster-config.test.ts',
  'test/sender/console/cli.test.ts',
  'test/sender/shards.test.ts',
  'test/sender/storage.test.ts',
  'test/receiver/crash.test.ts',
  'test/sender/cli.test.ts',
  'test/sender/durability.test.ts',
  'test/telemetry/worker-export.test.ts',
];

export default function coverageMap(testFile) {
  const file = testFile.replaceAll('\\', '/');
  return CHILD_PROCESS_TESTS.some((t) => file.endsWith(t)) ? null : [];
}
