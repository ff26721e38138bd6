// Small helpers shared by the harness entry points: argv, stdin JSON, JSON output, error text,
// and the --serve loop.

import { createInterface } from 'node:readline';

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

/**
 * The --serve loop: one JSON value per line of stdin, one line of stdout for each, until stdin
 * ends. `answer(value)` gives the reply object; whatever it throws is the reply
 * `{"usageError": "Name: message"}` (what a run of its own would have exited 2 for).
 */
export async function serveLines(answer) {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) {
      continue;
    }
    let reply;
    try {
      reply = await answer(JSON.parse(line));
    } catch (err) {
      reply = { usageError: errorText(err) };
    }
    await new Promise(resolve => process.stdout.write(`${JSON.stringify(reply)}\n`, resolve));
  }
}
