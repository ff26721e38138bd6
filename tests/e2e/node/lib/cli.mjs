// Small helpers shared by the harness entry points: argv, stdin JSON, JSON output, error text.

import { SUPPORTED_SDKS } from './sdk.mjs';

export function parseSdkArg(argv = process.argv.slice(2)) {
  const i = argv.indexOf('--sdk');
  const raw = i === -1 ? undefined : argv[i + 1];
  const sdk = Number(raw);
  if (!SUPPORTED_SDKS.includes(sdk)) {
    throw new UsageError(`expected --sdk ${SUPPORTED_SDKS.join('|')}, got ${JSON.stringify(raw)}`);
  }
  return sdk;
}

export class UsageError extends Error {
  name = 'UsageError';
}

export async function readStdinJson() {
  const parts = [];
  for await (const part of process.stdin) {
    parts.push(part);
  }
  const text = Buffer.concat(parts).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`stdin is not valid JSON: ${err.message}`);
  }
}

/** `Name: message`, plus the cause chain, for reporting an error as one string. */
export function errorText(err) {
  if (err == null) {
    return null;
  }
  if (!(err instanceof Error)) {
    return String(err);
  }
  let text = `${err.name}: ${err.message}`;
  let cause = err.cause;
  for (let depth = 0; cause != null && depth < 3; depth++) {
    text += ` [cause: ${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)}]`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

/** Writes `value` as JSON to stdout, then exits (so no stray socket or timer keeps Node alive). */
export function printJsonAndExit(value, code = 0) {
  process.stdout.write(`${JSON.stringify(value)}\n`, () => process.exit(code));
}

/** Runs an async main(); usage errors and crashes go to stderr with exit code 2. */
export function runMain(main) {
  main().catch(err => {
    process.stderr.write(`${err instanceof UsageError ? '' : (err?.stack ?? '')}\n${errorText(err)}\n`);
    process.exit(2);
  });
}
