/**
 * The `svc conformance receiver` flags. The kit itself loads only when the command runs, so
 * `svc --help` stays fast.
 */
import { Option, type Command } from 'commander';
import type { ReceiverCommandFlags } from './command.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerReceiverConformanceCommand(conformance: Command): void {
  conformance
    .command('receiver')
    .description('Act as a sender and grade the webhook receiver at <url>')
    .argument('[url]', "the receiver's webhook URL (as a sender would be given it)")
    .addOption(
      new Option('--brand <brand>', 'protocol brand word (env SVC_BRAND)').choices(['svc', 'adcp']),
    )
    .option(
      '--key <file>',
      'private JWK (or {"keys": [...]}) the receiver trusts; repeatable',
      collect,
    )
    .option(
      '--save-key <file>',
      'where to keep generated private keys (an existing file: its keys are used)',
    )
    .option('--force', 'with --save-key: make new keys and replace an existing file')
    .option('--print-jwks', 'print the public JWKS of the tester keys and exit')
    .addOption(
      new Option('--protocol-version <version>', 'duplicate semantics to grade')
        .choices(['3.1', '3.2'])
        .default('3.2'),
    )
    .option('--hmac-secret <secret>', 'secret of a legacy HMAC-SHA256 registration on the receiver')
    .option('--hmac-path <path>', 'path (on the target origin) registered for legacy HMAC')
    .option('--count-url <url>', 'GET URL of the receiver\'s dispatch count ({"count": n})')
    .option('--harness-url <url>', 'POST URL installing vector state (017-019); see the README')
    .option(
      '--wrong-purpose-key <file>',
      'private JWK the receiver publishes with a non-webhook purpose (008)',
    )
    .option(
      '--sign-only-key <file>',
      'private JWK the receiver publishes with key_ops ["sign"] (020)',
    )
    .option('--trust-vector-keys', "the receiver trusts the vectors' public test keys (keys.json)")
    .option(
      '--vectors <dir>',
      'folder of the signing vectors (default: the copy shipped in the package)',
    )
    .option('--json', 'print the report as JSON')
    .option('--junit <file>', 'also write a JUnit XML report')
    .option('--timeout <ms>', 'per request', '10000')
    .option('-y, --yes', 'do not pause after generating keys')
    .action(async (url: string | undefined, flags: ReceiverCommandFlags) =>
      (await import('./command.js')).receiverConformanceAction(url, flags),
    );
}
