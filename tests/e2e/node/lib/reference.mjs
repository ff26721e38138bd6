// The AI SDK's own server for the demo agent: `streamText` with the SDK's mock language model
// (`MockLanguageModelV3` from ai@6's `ai/test`, `MockLanguageModelV4` from ai@7's) and four tools
// mirroring demo_app.py, answered with `toUIMessageStreamResponse` the way the AI SDK's chatbot
// recipes write a route handler:
//
//   const result = streamText({ model, messages: await convertToModelMessages(messages, {tools}),
//                               tools, stopWhen: stepCountIs(10) });
//   return result.toUIMessageStreamResponse({ originalMessages: messages, generateMessageId,
//                                             onError });
//
// `onError` reports "Name: message" instead of the default "An error occurred.", so a test can
// tell the SDK's own refusal from a mistake in this file.
//
// Tools (as in demo_app.py):
//   get_weather     server tool (execute), no approval
//   process_payment server tool (execute), needsApproval: true
//   change_bgm      client tool (no execute)
//   get_location    client tool (no execute), needsApproval: true
//
// The mock model follows the single-stage part of the demo grammar (adk_asgi/testing/
// demo_grammar.py): when the prompt ends with the user's text it calls the tools the text names
// ("weather in Paris", "pay 5 to alice", "play track 2", "where am i", clauses joined by "and"),
// streaming each call's input like a real provider does (tool-input-start / -delta / -end, then
// tool-call); once the prompt ends with tool results it answers in text; otherwise it echoes.

import { randomBytes } from 'node:crypto';

const WEATHER_FORECASTS = ['sunny', 'cloudy', 'rainy', 'windy', 'snowy'];

/** demo_app.get_weather, deterministic so both servers return the same output. */
export function getWeather({ city }) {
  let sum = 0;
  for (const ch of city.toLowerCase()) {
    sum += ch.codePointAt(0);
  }
  const index = sum % WEATHER_FORECASTS.length;
  return { city, forecast: WEATHER_FORECASTS[index], temperature_c: 10 + index * 3 };
}

/** demo_app.process_payment. */
export function processPayment({ amount, recipient, currency = 'USD' }) {
  return { status: 'sent', amount, recipient, currency };
}

// Python's string.punctuation plus curly quotes, stripped from both ends of a word.
const PUNCT = '[!-/:-@[-`{-~\u2018\u2019\u201c\u201d]+';
const PUNCTUATION = new RegExp(`^${PUNCT}|${PUNCT}$`, 'g');
const CLAUSES = [
  ['get_weather', /\bweather\s+in\s+(\S+)/gi],
  ['process_payment', /\bpay\s+\$?(\d+(?:\.\d+)?)\s+to\s+(\S+)/gi],
  ['change_bgm', /\bplay\s+track\s+#?(\d+(?:\.\d+)?)/gi],
  ['get_location', /\bwhere\s+am\s+i\b/gi],
];

/** The tool calls a user text asks for, in textual order (the demo grammar without "then"). */
export function parseCalls(text) {
  const found = [];
  for (const clause of text.split(/\s+and\s+/i)) {
    const inClause = [];
    for (const [name, pattern] of CLAUSES) {
      for (const match of clause.matchAll(pattern)) {
        let input;
        if (name === 'get_weather') {
          input = { city: match[1].replace(PUNCTUATION, '') };
        } else if (name === 'process_payment') {
          input = {
            amount: Number(match[1]),
            recipient: match[2].replace(PUNCTUATION, ''),
            currency: 'USD',
          };
        } else if (name === 'change_bgm') {
          input = { track: Math.trunc(Number(match[1])) };
        } else {
          input = {};
        }
        inClause.push({ at: match.index, name, input });
      }
    }
    inClause.sort((a, b) => a.at - b.at);
    found.push(...inClause);
  }
  return found.map(({ name, input }) => ({ name, input }));
}

function userText(message) {
  const content = message.content;
  if (typeof content === 'string') {
    return content;
  }
  return content
    .filter(part => part.type === 'text')
    .map(part => part.text)
    .join('');
}

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** The mock model's stream parts for one call, from the prompt it is given. */
export function respond(prompt, nextId) {
  const parts = [{ type: 'stream-start', warnings: [] }];
  const last = prompt.at(-1);
  const lastUser = prompt.findLast(message => message.role === 'user');
  const calls = last?.role === 'user' ? parseCalls(userText(last)) : [];
  if (calls.length > 0) {
    for (const call of calls) {
      const id = nextId('call');
      const input = JSON.stringify(call.input);
      parts.push(
        { type: 'tool-input-start', id, toolName: call.name },
        { type: 'tool-input-delta', id, delta: input },
        { type: 'tool-input-end', id },
        { type: 'tool-call', toolCallId: id, toolName: call.name, input },
      );
    }
    const finishReason = { unified: 'tool-calls', raw: 'tool_calls' };
    parts.push({ type: 'finish', finishReason, usage: USAGE });
    return parts;
  }
  let text;
  if (last?.role === 'tool') {
    const results = prompt
      .slice(prompt.indexOf(lastUser) + 1)
      .filter(message => message.role === 'tool')
      .flatMap(message => message.content)
      .filter(part => part.type === 'tool-result');
    const quote = ({ toolName, output }) =>
      output.type === 'execution-denied'
        ? `${toolName} was denied`
        : `${toolName}: ${JSON.stringify(output.value)}`;
    text = `Here you go: ${results.map(quote).join('; ')}.`;
  } else {
    text = `You said: "${lastUser == null ? '' : userText(lastUser)}".`;
  }
  const id = nextId('text');
  parts.push(
    { type: 'text-start', id },
    { type: 'text-delta', id, delta: text },
    { type: 'text-end', id },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE },
  );
  return parts;
}

/** Ids unique across requests (each request makes its own: a counter alone would repeat). */
function makeIds() {
  const run = randomBytes(4).toString('hex');
  const counts = new Map();
  return kind => {
    const n = (counts.get(kind) ?? 0) + 1;
    counts.set(kind, n);
    return `ref-${kind}-${run}-${n}`;
  };
}

/** The mock model of the given SDK (its own `ai/test` class), answering with `respond`. */
export async function mockModel(loaded, nextId) {
  const testing = await import(import.meta.resolve(`ai${loaded.sdk}/test`));
  const Mock = loaded.sdk === 6 ? testing.MockLanguageModelV3 : testing.MockLanguageModelV4;
  return new Mock({
    doStream: async ({ prompt }) => ({
      stream: testing.convertArrayToReadableStream(respond(prompt, nextId)),
    }),
  });
}

/** The demo agent's four tools, as the AI SDK declares them. */
export function demoTools(ai) {
  const object = (properties, required) =>
    ai.jsonSchema({ type: 'object', properties, required, additionalProperties: false });
  return {
    get_weather: ai.tool({
      description: 'Get the current weather for a city.',
      inputSchema: object({ city: { type: 'string' } }, ['city']),
      execute: async input => getWeather(input),
    }),
    process_payment: ai.tool({
      description: 'Send money to someone. The user approves every payment before it is made.',
      inputSchema: object(
        { amount: { type: 'number' }, recipient: { type: 'string' }, currency: { type: 'string' } },
        ['amount', 'recipient'],
      ),
      needsApproval: true,
      execute: async input => processPayment(input),
    }),
    change_bgm: ai.tool({
      description: 'Change the background music the user hears to another track.',
      inputSchema: object({ track: { type: 'integer' } }, ['track']),
    }),
    get_location: ai.tool({
      description: "Get the user's current location from their browser.",
      inputSchema: object({}, []),
      needsApproval: true,
    }),
  };
}

/**
 * One POST /chat of the reference server: the UI messages in, the Response out.
 * @param {{sdk: number, ai: any}} loaded result of loadSdk()
 * @param {object[]} messages the request's UI messages, as the stock client sends them
 */
export async function referenceChat(loaded, messages) {
  const { ai } = loaded;
  const nextId = makeIds();
  const tools = demoTools(ai);
  const model = await mockModel(loaded, nextId);
  const result = ai.streamText({
    model,
    messages: await ai.convertToModelMessages(messages, { tools }),
    tools,
    stopWhen: ai.stepCountIs(10),
    onError: () => {}, // the default logs to stderr; the error still reaches the stream
  });
  return result.toUIMessageStreamResponse({
    originalMessages: messages,
    generateMessageId: () => nextId('msg'),
    // The stock default masks every error as "An error occurred."; the real one shows the cause.
    onError: error => (error instanceof Error ? `${error.name}: ${error.message}` : String(error)),
  });
}
