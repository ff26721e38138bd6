#!/usr/bin/env node
// Clicks through one scenario of the demo page (web/) in Debian's Chromium, headless, driven by
// playwright-core (a devDependency of web/). test_demo_page.py runs it once per scenario and mode;
// by hand, against `make demo`:
//
//   node tests/browser/run.mjs http://127.0.0.1:8000 live payment-approve
//   node tests/browser/run.mjs http://127.0.0.1:8000 sse tour --screenshot docs/demo.png
//
// A fresh browser (fresh profile, so a fresh identity cookie) per run, with the geolocation
// permission granted and fixed coordinates. The whole run, browser start included, has a deadline
// (--deadline-ms, 60 s by default; the caller's own timeout must be longer). Exit code 0 when the
// scenario passed; 1 when it failed or ran out of time, with the reason (and the page's console
// errors) on stderr and a screenshot at --failure-screenshot; 3 when the browser never started
// (so there is no page and no screenshot); 2 for a usage error.
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const require = createRequire(new URL("../../web/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--use-fake-ui-for-media-stream", // the microphone: allowed, and a fake device (a beep)
  "--use-fake-device-for-media-stream",
];
const MODES = { sse: "SSE", live: "Live", voice: "Live + voice" };
const TIMEOUT_MS = 10_000;
const DEADLINE_MS = 60_000;
const SCREENSHOT_MS = 5_000;
const BROWSER_NEVER_STARTED = 3;

// The scripted demo model's sentences (docs/testing.md#the-demo-grammar) and the demo tools'
// results.
const PARIS = '{"city": "Paris", "forecast": "windy", "temperature_c": 19}';
const paid = (amount, recipient) =>
  `{"amount": ${amount}, "currency": "USD", "recipient": "${recipient}", "status": "sent"}`;
const HERE = { latitude: 48.85, longitude: 2.35 };

// --- what a user does and sees --------------------------------------------------------------

const card = (page, tool, state) =>
  page.locator(`.tool[data-tool="${tool}"][data-state="${state}"]`);

async function ask(page, prompt) {
  await page.getByRole("button", { name: prompt, exact: true }).click();
}

async function decide(page, tool, button) {
  await card(page, tool, "approval-requested").getByRole("button", { name: button }).click();
}

async function waitFor(locator, what) {
  try {
    await locator.first().waitFor({ timeout: TIMEOUT_MS });
  } catch {
    throw new Error(`not seen within ${TIMEOUT_MS} ms: ${what}`);
  }
}

/** The tool cards and the last answer are exactly these, the chat is idle and shows no error
 * (or exactly `error`). */
async function settled(page, { tools, answer, error }) {
  for (const [tool, state] of tools) await waitFor(card(page, tool, state), `${tool} ${state}`);
  await waitFor(page.locator(".message.assistant > p", { hasText: answer }), `"${answer}"`);
  const idle = error ? "error" : "ready";
  await waitFor(page.locator(`.status[data-status="${idle}"]`), `status ${idle}`);
  const shown = await page
    .locator(".tool")
    .evaluateAll((cards) => cards.map((c) => [c.dataset.tool, c.dataset.state]));
  equal(shown, tools, "tool cards (tool, state)");
  const texts = await page.locator(".message.assistant > p").allTextContents();
  equal(texts.at(-1), answer, "the assistant's last text part");
  equal(await page.getByRole("alert").allTextContents(), error ? [error] : [], "errors shown");
}

/** The music is really playing: the page's AudioContext runs, and its clock keeps moving the
 * note scheduler on (track 2: a note every 0.25 s, scheduled 0.5 s ahead, so 2 notes before the
 * clock starts, then about 4 more per second). */
async function audible(page) {
  const music = page.locator(".music");
  await waitFor(page.locator('.music[data-audio="running"]'), "the AudioContext running");
  const first = Number(await music.getAttribute("data-notes"));
  if (!(first >= 2)) throw new Error(`notes scheduled at the start: expected >= 2, got ${first}`);
  const more = first + 4;
  try {
    await page.waitForFunction(
      (n) => Number(document.querySelector(".music")?.dataset.notes) >= n,
      more,
      { timeout: TIMEOUT_MS },
    );
  } catch {
    const last = await music.getAttribute("data-notes");
    throw new Error(`the music stalled: ${last} notes scheduled, not ${more} in ${TIMEOUT_MS} ms`);
  }
  equal(await music.getAttribute("data-audio"), "running", "the AudioContext's state");
}

function equal(actual, expected, what) {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

/** What the page does about its answer once reloaded (start waiting before the reload):
 * "resumed" when its resume found the answer still streaming (SSE: GET .../stream is 200; live:
 * the server starts the `resume` request's stream), else what it got instead. */
function resumeAfterReload(page, mode) {
  if (mode === "sse") {
    return page
      .waitForResponse((r) => r.url().endsWith("/stream"), { timeout: TIMEOUT_MS })
      .then((r) => (r.status() === 200 ? "resumed" : `GET .../stream: HTTP ${r.status()}`));
  }
  let onSocket;
  const answered = new Promise((resolve) => {
    onSocket = (socket) => {
      let resumeId;
      socket.on("framesent", ({ payload }) => {
        const frame = typeof payload === "string" ? JSON.parse(payload) : {};
        if (frame.type === "resume") resumeId = frame.requestId;
      });
      socket.on("framereceived", ({ payload }) => {
        const frame = typeof payload === "string" ? JSON.parse(payload) : {};
        if (resumeId === undefined || frame.requestId !== resumeId) return;
        resolve(["start", "chunk"].includes(frame.type) ? "resumed" : `a ${frame.type} frame`);
      });
    };
    page.on("websocket", onSocket);
  });
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(`no answer to a resume within ${TIMEOUT_MS} ms`), TIMEOUT_MS);
  });
  return Promise.race([answered, late]).finally(() => {
    clearTimeout(timer);
    page.off("websocket", onSocket);
  });
}

// --- the scenarios ----------------------------------------------------------------------------

const SCENARIOS = {
  async weather(page) {
    await ask(page, "What's the weather in Paris?");
    await settled(page, {
      tools: [["get_weather", "output-available"]],
      answer: `Here you go: get_weather: ${PARIS}.`,
    });
  },

  async "payment-approve"(page) {
    await ask(page, "pay 5 to alice");
    await decide(page, "process_payment", "Approve");
    await settled(page, {
      tools: [["process_payment", "output-available"]],
      answer: `Here you go: process_payment: ${paid(5, "alice")}.`,
    });
  },

  async "payment-deny"(page) {
    await ask(page, "pay 5 to alice");
    await decide(page, "process_payment", "Deny");
    await settled(page, {
      tools: [["process_payment", "output-denied"]],
      answer: "Here you go: process_payment was denied.",
    });
  },

  async "two-payments"(page) {
    await ask(page, "pay 5 to alice then pay 7 to bob");
    await decide(page, "process_payment", "Approve");
    await waitFor(page.getByText("Done. Next, process_payment."), "the intermediate sentence");
    await decide(page, "process_payment", "Deny");
    await settled(page, {
      tools: [
        ["process_payment", "output-available"],
        ["process_payment", "output-denied"],
      ],
      answer: `Here you go: process_payment: ${paid(5, "alice")}; process_payment was denied.`,
    });
  },

  async bgm(page) {
    await ask(page, "play track 2");
    await settled(page, {
      tools: [["change_bgm", "output-available"]],
      answer: 'Here you go: change_bgm: {"playing": 2}.',
    });
    await waitFor(page.getByText("Now playing: track 2"), "Now playing: track 2");
    await audible(page);
  },

  async "location-approve"(page) {
    await ask(page, "where am i");
    await decide(page, "get_location", "Approve");
    await settled(page, {
      tools: [["get_location", "output-available"]],
      answer: 'Here you go: get_location: {"latitude": 48.85, "longitude": 2.35}.',
    });
  },

  async "location-deny"(page) {
    await ask(page, "where am i");
    await decide(page, "get_location", "Deny");
    await settled(page, {
      tools: [["get_location", "output-denied"]],
      answer: "Here you go: get_location was denied.",
    });
  },

  async explode(page) {
    await ask(page, "explode");
    await settled(page, {
      tools: [],
      answer: "Something is about to go wrong...",
      error: "Error: An error occurred.", // masked (on_error): the model's own words are logged
    });
  },

  async talk(page, seen) {
    // Chromium's fake microphone plays a beep; the scripted model "hears" its length
    await page.getByRole("button", { name: "Talk", exact: true }).click();
    await page.waitForTimeout(1000);
    await page.getByRole("button", { name: "Stop talking", exact: true }).click();
    await waitFor(page.getByText(/^You said: \[\d+\.\d s of audio\]$/), "the user's transcript");
    const transcript = await page.locator(".transcript").last().textContent();
    const heard = transcript.slice("You said: ".length);
    await settled(page, {
      tools: [],
      answer:
        `You said: "${heard}". I can try "weather in Paris", "pay 5 to alice", "play track 3" ` +
        'or "where am i" (join them with "and" or "then").',
    });
    if (seen.audioFrames === 0) throw new Error("no audio frame reached the page");
  },

  async "reload-mid-answer"(page, seen, mode) {
    // A reload while the answer streams: the new page resumes it (SSE: GET .../stream; live: a
    // `resume` frame on its new socket), replayed from its start, and shows it whole, once; a
    // second reload shows the same from history.
    const slow = "tell me a long story slowly";
    await page.getByRole("textbox", { name: "Message" }).fill(slow);
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await waitFor(page.locator('.status[data-status="streaming"]'), "the answer streaming");
    await waitFor(page.locator(".message.assistant > p", { hasText: "You said" }), "some text");
    const resumed = resumeAfterReload(page, mode);
    await page.reload();
    equal(await resumed, "resumed", "the resume after the reload");
    const answer =
      `You said: "${slow}". I can try "weather in Paris", "pay 5 to alice", "play track 3" ` +
      'or "where am i" (join them with "and" or "then").';
    const once = async (when) => {
      await settled(page, { tools: [], answer });
      const shown = await page
        .locator(".message")
        .evaluateAll((all) => all.map((m) => [m.dataset.role, m.innerText]));
      equal(shown, [["user", slow], ["assistant", answer]], `the messages shown ${when}`);
    };
    await once("after the reload mid-answer");
    const chatId = await page.locator(".chat-id code").textContent();
    const history = page.waitForResponse((r) => r.url().endsWith(`/chat/${chatId}/messages`));
    await page.reload();
    const roles = (await (await history).json()).map((m) => m.role);
    equal(roles, ["user", "assistant"], `GET /agent/chat/${chatId}/messages: the roles`);
    await once("after a second reload");
  },

  async "switch-mode"(page) {
    // A payment asked in one mode is approved in the other: the switch keeps the chat.
    await ask(page, "pay 5 to alice");
    await waitFor(card(page, "process_payment", "approval-requested"), "the approval");
    const label = page.locator(".chat-id");
    const before = await label.textContent();
    const other = before.endsWith("· SSE") ? "Live" : "SSE";
    await page.getByRole("button", { name: other, exact: true }).click();
    await waitFor(page.locator(".chat-id", { hasText: `· ${other}` }), `the ${other} mode`);
    equal(
      (await label.textContent()).split(" · ")[0],
      before.split(" · ")[0],
      "the chat id after the switch",
    );
    await decide(page, "process_payment", "Approve");
    await settled(page, {
      tools: [["process_payment", "output-available"]],
      answer: `Here you go: process_payment: ${paid(5, "alice")}.`,
    });
  },

  async tour(page) {
    // not a test: the README's screenshot (docs/demo.png)
    await ask(page, "What's the weather in Paris?");
    await waitFor(page.getByText("Here you go: get_weather"), "the weather");
    await ask(page, "play track 2");
    await waitFor(page.getByText("Now playing: track 2"), "the music");
    await waitFor(page.locator('.status[data-status="ready"]'), "ready");
    await ask(page, "pay 5 to alice");
    await waitFor(card(page, "process_payment", "approval-requested"), "the approval");
  },

  async hang() {
    // not a test: never ends, so the deadline has to end the run (test_demo_page.py checks it)
    await new Promise(() => {});
  },

  async reload(page) {
    await ask(page, "What's the weather in Paris?");
    const expected = {
      tools: [["get_weather", "output-available"]],
      answer: `Here you go: get_weather: ${PARIS}.`,
    };
    await settled(page, expected);
    const chatId = await page.locator(".chat-id code").textContent();
    const history = page.waitForResponse((r) => r.url().endsWith(`/chat/${chatId}/messages`));
    await page.reload(); // the page reopens the chat of its URL with GET /agent/chat/{id}/messages
    const messages = await (await history).json();
    const roles = messages.map((m) => m.role);
    equal(roles, ["user", "assistant"], `GET /agent/chat/${chatId}/messages: the roles`);
    await settled(page, expected);
  },
};

// --- run one ----------------------------------------------------------------------------------

class DeadlinePassed extends Error {}

/** `work`, or a DeadlinePassed rejection once `deadline` (a Date.now() value) has passed. */
function beforeDeadline(work, deadline, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new DeadlinePassed(`${what}: the deadline of the run passed`)),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

async function main() {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      screenshot: { type: "string" },
      "failure-screenshot": { type: "string" },
      "deadline-ms": { type: "string", default: String(DEADLINE_MS) },
    },
  });
  const [base, mode, name] = positionals;
  const deadlineMs = Number(values["deadline-ms"]);
  if (!base || !MODES[mode] || !SCENARIOS[name] || !(deadlineMs > 0)) {
    console.error(
      `usage: run.mjs BASE_URL ${Object.keys(MODES).join("|")} SCENARIO [--deadline-ms N] ` +
        "[--screenshot PATH] [--failure-screenshot PATH]",
    );
    console.error(`scenarios: ${Object.keys(SCENARIOS).join(", ")}`);
    process.exit(2);
  }
  const deadline = Date.now() + deadlineMs;
  // Whatever hangs (closing the browser included), the process ends soon after the deadline.
  setTimeout(() => {
    console.error(`${name} (${mode}): still running ${SCREENSHOT_MS} ms after the deadline`);
    process.exit(1);
  }, deadlineMs + 2 * SCREENSHOT_MS).unref();

  let browser;
  try {
    const launch = chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    browser = await beforeDeadline(launch, deadline, "starting Chromium");
  } catch (error) {
    console.error(`${name} (${mode}): the browser never started: ${error.message}`);
    process.exit(BROWSER_NEVER_STARTED);
  }
  try {
    await run(browser, { base, mode, name, values, deadline, deadlineMs });
  } finally {
    await browser.close().catch(() => {});
  }
}

async function run(browser, { base, mode, name, values, deadline, deadlineMs }) {
  const context = await browser.newContext({
    geolocation: HERE,
    permissions: ["geolocation", "microphone"],
    viewport: { width: 800, height: 640 },
  });
  const page = await context.newPage();
  const problems = [];
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  const seen = { audioFrames: 0, frames: [] }; // live: what went over the WebSocket
  const frame = (direction, payload) => {
    if (typeof payload !== "string") return direction === "<" && seen.audioFrames++;
    const { type, chunk } = JSON.parse(payload);
    seen.frames.push(`${direction} ${type}${chunk ? ` ${chunk.type}` : ""}`);
  };
  page.on("websocket", (socket) => {
    socket.on("framesent", ({ payload }) => frame(">", payload));
    socket.on("framereceived", ({ payload }) => frame("<", payload));
  });
  const scenario = async () => {
    await page.goto(base);
    await page.getByRole("button", { name: MODES[mode], exact: true }).click();
    const chosen = page.getByRole("button", { name: MODES[mode], exact: true, pressed: true });
    await waitFor(chosen, `mode ${mode}`);
    await SCENARIOS[name](page, seen, mode);
    if (problems.length) throw new Error("the page reported errors");
    if (values.screenshot) await page.screenshot({ path: values.screenshot, fullPage: true });
  };
  try {
    await beforeDeadline(scenario(), deadline, name);
  } catch (error) {
    const reason =
      error instanceof DeadlinePassed ? `not done within its deadline of ${deadlineMs} ms` : "";
    console.error(`${name} (${mode}) failed: ${reason || error.message}`);
    const shown = await page
      .locator("main")
      .innerText({ timeout: SCREENSHOT_MS })
      .catch(() => "(nothing)");
    console.error(`the page shows:\n${shown.slice(0, 2000)}\n`);
    for (const line of problems) console.error(line);
    if (seen.frames.length) {
      console.error(`WebSocket frames (the last 40; and ${seen.audioFrames} audio frames in):`);
      console.error(seen.frames.slice(-40).join("\n"));
    }
    const path = values["failure-screenshot"];
    if (path) {
      await page
        .screenshot({ path, fullPage: true, timeout: SCREENSHOT_MS })
        .catch((e) => console.error(`no screenshot: ${e.message}`));
    }
    process.exitCode = 1;
  }
}

await main();
// A scenario cut off by the deadline may still hold timers: leave now, with the verdict.
process.exit(process.exitCode ?? 0);
