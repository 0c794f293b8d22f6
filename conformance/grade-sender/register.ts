/**
 * The `svc conformance sender` flags. The kit itself loads only when the command runs, so
 * `svc --help` stays fast.
 */
import { Option, type Command } from 'commander';
import type { SenderCommandFlags } from './command.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerSenderConformanceCommand(conformance: Command): void {
  conformance
    .command('sender')
    .description('Host a grading receiver and grade the webhook sender that delivers to it')
    .addOption(
      new Option('--brand <brand>', 'protocol brand word (env SVC_BRAND)').choices(['svc', 'adcp']),
    )
    .addOption(
      new Option('--protocol-version <version>', 'protocol version graded')
        .choices(['3.1', '3.2'])
        .default('3.2'),
    )
    .option('--listen <host:port>', 'address of the grading receiver', '127.0.0.1:0')
    .option(
      '--public-url <url>',
      'base URL the sender must call, when not the listen address (tunnel, proxy)',
    )
    .option('--jwks <file>', "the sender's public JWKS as a file")
    .option('--jwks-url <url>', "the sender's JWKS URL")
    .option('--brand-json-url <url>', "the seller operator's brand.json")
    .option(
      '--agent-url <url>',
      "the seller agent's URL (brand.json at its origin, its agents[] entry)",
    )
    .option(
      '--agent <url>',
      'drive this seller agent over MCP (create_media_buy with push_notification_config)',
    )
    .option(
      '--agent-header <header>',
      'header for calls to --agent, "Name: value"; repeatable',
      collect,
    )
    .option(
      '--agent-args <file>',
      'JSON object merged into the create_media_buy arguments (account, brand, packages...)',
    )
    .option('--step-timeout <seconds>', 'wait per step for deliveries', '90')
    .option('--quiet <seconds>', 'silence that counts as "no further delivery"', '10')
    .option('--retry-count <n>', '5xx answers before the 200 in the retry step (1-10)', '3')
    .option('--retry-status <status>', 'status of those answers: 429, 500, 502, 503 or 504', '503')
    .option('--json', 'print the report as JSON')
    .option('--junit <file>', 'also write a JUnit XML report')
    .action(async (flags: SenderCommandFlags) =>
      (await import('./command.js')).senderConformanceAction(flags),
    );
}
