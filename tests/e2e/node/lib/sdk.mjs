// Loads one of the three installed AI SDK versions ("ai5" = npm:ai@5.0.277, "ai6" = npm:ai@6.0.326,
// "ai7" = npm:ai@7.0.173) together with the exact `@ai-sdk/provider-utils` copy that this `ai`
// version itself imports.
//
// npm lays the packages out as (see package-lock.json):
//   node_modules/ai5                                      ai@5.0.277
//   node_modules/ai5/node_modules/@ai-sdk/provider-utils  3.0.41  (nested; used by ai5)
//   node_modules/ai6                                      ai@6.0.326
//   node_modules/@ai-sdk/provider-utils                   4.0.65  (hoisted; used by ai6)
//   node_modules/ai7                                      ai@7.0.173
//   node_modules/ai7/node_modules/@ai-sdk/provider-utils  5.0.81  (nested; used by ai7)
// We do not hard-code that layout: provider-utils is resolved with Node's own algorithm starting
// from the aliased `ai` package's entry file, i.e. exactly the module `ai` imports.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const SUPPORTED_SDKS = [5, 6, 7];

// What ai@5 lacks: approvals (no addToolApprovalResponse, no approval helper) and the
// UIMessageStreamError class (its stream processing throws plain Errors).
const NOT_IN_V5 = ['UIMessageStreamError', 'lastAssistantMessageIsCompleteWithApprovalResponses'];

const cache = new Map();

function readJson(path) {
  return JSON.parse(readFileSync(path, 'utf8'));
}

function packageRootOf(requireFn, request) {
  // Both provider-utils versions export "./package.json".
  return dirname(requireFn.resolve(`${request}/package.json`));
}

function esmEntryOf(root) {
  const pkg = readJson(join(root, 'package.json'));
  const dot = pkg.exports?.['.'];
  const rel =
    (typeof dot === 'string' ? dot : (dot?.import ?? dot?.default)) ?? pkg.module ?? pkg.main;
  if (typeof rel !== 'string') {
    throw new Error(`cannot find the ESM entry of ${root}`);
  }
  return { pkg, file: join(root, rel) };
}

/**
 * @param {number} sdk 5, 6 or 7
 * @returns {Promise<{sdk: number, ai: any, providerUtils: any, info: object}>}
 */
export async function loadSdk(sdk) {
  if (!SUPPORTED_SDKS.includes(sdk)) {
    throw new Error(`unsupported --sdk ${sdk}; expected one of ${SUPPORTED_SDKS.join(', ')}`);
  }
  if (cache.has(sdk)) {
    return cache.get(sdk);
  }
  const alias = `ai${sdk}`;
  const aiEntryUrl = import.meta.resolve(alias);
  const aiEntryFile = fileURLToPath(aiEntryUrl);
  const requireFromAi = createRequire(aiEntryFile);
  const aiRoot = packageRootOf(createRequire(import.meta.url), alias);
  const aiPkg = readJson(join(aiRoot, 'package.json'));

  const puRoot = packageRootOf(requireFromAi, '@ai-sdk/provider-utils');
  const { pkg: puPkg, file: puEntryFile } = esmEntryOf(puRoot);

  const ai = await import(aiEntryUrl);
  const providerUtils = await import(pathToFileURL(puEntryFile).href);

  // Integrity checks: the functions we use must be the very ones DefaultChatTransport uses.
  for (const name of [
    'uiMessageChunkSchema',
    'readUIMessageStream',
    'UIMessageStreamError',
    'AbstractChat',
    'DefaultChatTransport',
    'lastAssistantMessageIsCompleteWithApprovalResponses',
    'lastAssistantMessageIsCompleteWithToolCalls',
    'isToolUIPart',
  ].filter(name => sdk !== 5 || !NOT_IN_V5.includes(name))) {
    if (ai[name] == null) {
      throw new Error(`${alias} (ai@${aiPkg.version}) does not export ${name}`);
    }
  }
  if (typeof providerUtils.parseJsonEventStream !== 'function') {
    throw new Error(`@ai-sdk/provider-utils@${puPkg.version} has no parseJsonEventStream`);
  }
  if (ai.parseJsonEventStream != null && ai.parseJsonEventStream !== providerUtils.parseJsonEventStream) {
    throw new Error(
      `${alias} re-exports a different parseJsonEventStream than ${puEntryFile}; ` +
        'the package layout is not what the harness expects',
    );
  }

  const loaded = {
    sdk,
    ai,
    providerUtils,
    info: {
      sdk,
      ai: { version: aiPkg.version, entry: aiEntryFile },
      providerUtils: { version: puPkg.version, entry: puEntryFile },
    },
  };
  cache.set(sdk, loaded);
  return loaded;
}
