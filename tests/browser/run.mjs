#!/usr/bin/env node
// Clicks through one scenario of the demo page (web/) in Debian's Chromium, headless, driven by
// playwright-core (a devDependency of web/). test_demo_page.py runs it once per scenario and mode;
// by hand, against `make demo`:
//
//   node tests/browser/run.mjs http://127.0.0.1:8000 live payment-approve
//   node tests/browser/run.mjs http://127.0.0.1:8000 sse chat-list --viewport 375x740
//   node tests/browser/run.mjs http://127.0.0.1:8000 sse tour --screenshot docs/demo.png
//
// The last one makes the README's screenshot (`tour` is no test: it only sets the page up).
//
// Each run has a new browser context (its own cookies, so a fresh identity cookie, storage and
// permissions), with the geolocation permission granted and fixed coordinates, in a window of
// --viewport (900x700 by default; a width under 640 is a phone: touch, and the page's phone
// layout). The whole run, browser start included, has a deadline (--deadline-ms, 60 s by default;
// the caller's own timeout must be longer). Exit code 0 when the scenario passed; 1 when it failed
// or ran out of time, with the reason (and the page's console errors) on stderr and a screenshot
// at --failure-screenshot; 3 when the browser never started (so there is no page and no
// screenshot); 2 for a usage error.
//
// Run by hand, it starts a browser of its own and closes it. The tests keep one: `run.mjs --serve`
// (see serve() below, and tests/browser/kept_browser.py) starts Chromium once and takes one run a
// line, each in a new context: the same browser start-up flags for all (the fake microphone
// included), so no scenario needs a browser of its own.
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import zlib from "node:zlib";

import { serveLines } from "../e2e/node/lib/cli.mjs";

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
const VIEWPORT = "900x700"; // a laptop window; a phone is 375x740
const SCREENSHOT_MS = 5_000;
const BROWSER_NEVER_STARTED = 3;

// The scripted demo model's sentences (docs/testing.md#the-demo-grammar) and the demo tools'
// results.
const PARIS = '{"city": "Paris", "forecast": "windy", "temperature_c": 19}';
const paid = (amount, recipient) =>
  `{"amount": ${amount}, "currency": "USD", "recipient": "${recipient}", "status": "sent"}`;
const HERE = { latitude: 48.85, longitude: 2.35 };
const youSaid = (text) =>
  `You said: "${text}". I can try "weather in Paris", "pay 5 to alice", "play track 3" ` +
  'or "where am i" (join them with "and" or "then").';
const EXPLODED = "Something is about to go wrong...";
const MASKED = "An error occurred."; // what the server shows of a failure (on_error's default)
const NOT_RUN = "Not run: a new message was sent before the approval was answered.";
const CLOSED = "Closed: a new message was sent";
const PHONE_WIDTH = 640; // the page's phone layout is below this width
const TAP = 44; // the smallest tap target on a phone, in CSS pixels

// --- what a user does and sees --------------------------------------------------------------

const card = (page, tool, state) =>
  page.locator(`.tool[data-tool="${tool}"][data-state="${state}"]`);
const phone = (page) => page.viewportSize().width < PHONE_WIDTH;
const status = (page, value) => page.locator(`.status[data-status="${value}"]`);
const button = (scope, name) => scope.getByRole("button", { name, exact: true });
const chatId = (page) => page.locator(".chat-id code").textContent();

/** `promise`, awaited later: should what comes before fail first, its rejection is no
 * "unhandled rejection" that ends the process. */
function later(promise) {
  promise.catch(() => {});
  return promise;
}

/** The page's next POST /agent/chat. */
const posting = (page) =>
  page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/agent/chat"));

/** Type `text` into the input bar and press Send. */
async function send(page, text) {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await button(page, "Send").click();
}

/** The messages shown, as [role, text] pairs. */
function shownMessages(page) {
  return page
    .locator(".message")
    .evaluateAll((all) => all.map((m) => [m.dataset.role, m.innerText.replace(/\n+/g, "\n")]));
}

/** GET /agent/chat/{id}/messages with the page's identity cookie. */
async function serverHistory(page, id) {
  // page.request: the page's cookies, and a 404 is not one of the page's console errors
  const response = await page.request.get(new URL(`/agent/chat/${id}/messages`, page.url()).href);
  return { status: response.status(), body: await response.json() };
}

/** The chat list, opened first on a phone (where it hides behind the Chats button). */
async function chatList(page) {
  if (phone(page)) {
    const toggle = button(page, "Chats");
    if ((await toggle.getAttribute("aria-expanded")) !== "true") await toggle.click();
  }
  const list = page.getByRole("complementary", { name: "Chats" });
  await waitFor(list.getByRole("button", { name: "+ New chat" }), "the chat list");
  return list;
}

/** The titles of the chats listed, once there are `count` of them. */
async function listedChats(page, count) {
  const list = await chatList(page);
  const items = list.locator(".chat-list li");
  await page
    .waitForFunction((n) => document.querySelectorAll(".chat-list li").length === n, count, {
      timeout: TIMEOUT_MS,
    })
    .catch(async () => {
      const titles = await items.locator(".title").allTextContents();
      throw new Error(`the chat list: expected ${count} chats, got ${JSON.stringify(titles)}`);
    });
  return { list, titles: await items.locator(".title").allTextContents() };
}

/** `predicate(arg)` holds in the page, within TIMEOUT_MS, else an error naming `what`. */
async function until(page, predicate, arg, what) {
  try {
    await page.waitForFunction(predicate, arg, { timeout: TIMEOUT_MS, polling: 50 });
  } catch {
    throw new Error(`not true within ${TIMEOUT_MS} ms: ${what}`);
  }
}

/** A small PNG (`width` x `height`, one colour), made here so the test needs no file. */
function png(width, height) {
  const chunk = (type, data) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB
  const blue = Buffer.from([47, 95, 179]);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, blue)]);
  const pixels = zlib.deflateSync(Buffer.concat(Array(height).fill(row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", pixels),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** The bounding box of `locator`, checked to be a tap target on a phone. */
async function tapTarget(locator, what) {
  const box = await locator.boundingBox();
  if (!box) throw new Error(`${what}: not shown`);
  if (box.height < TAP || box.width < TAP) {
    throw new Error(`${what}: ${box.width} x ${box.height} px, under ${TAP} px`);
  }
}

async function ask(page, prompt) {
  await page.getByRole("button", { name: prompt, exact: true }).click();
}

async function decide(page, tool, name) {
  const open = page.locator(
    `.tool[data-tool="${tool}"][data-state="approval-requested"]:not([data-closed])`,
  );
  await open.getByRole("button", { name }).click();
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
      error: `Error: ${MASKED}`, // masked (on_error): the model's own words are logged
    });
    // the failure is also a part of the message (data-error), shown as a note in it
    const note = page.locator(".message.assistant .error-note");
    equal(await note.allInnerTexts(), [`Error: ${MASKED}`], "the error note in the message");
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
      answer: youSaid(heard),
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
    const answer = youSaid(slow);
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

  // --- what a user expects of a chat product --------------------------------------------------

  async stop(page, seen, mode) {
    // Stop while the answer streams: the page stops reading (stop()) and, over SSE, asks the
    // server to stop the answer itself (DELETE .../stream); live, stop() sends an `abort` frame.
    // The answer is over: a reload finds nothing to resume and shows no more than was shown.
    const slow = `tell me a long story slowly, ${"and on and on ".repeat(30)}the end`;
    let release;
    if (mode === "sse") {
      // hold the request back, to see what the page shows before the answer starts
      const held = new Promise((resolve) => (release = resolve));
      await page.route("**/agent/chat", (route) => held.then(() => route.continue()), { times: 1 });
    }
    await send(page, slow);
    if (mode === "sse") {
      await waitFor(status(page, "submitted"), "status submitted");
      await waitFor(page.locator('.progress[data-progress="thinking"]'), "Thinking…");
      equal(await page.locator(".progress").innerText(), "Thinking…", "the progress shown");
      await waitFor(button(page, "Stop"), "the Stop button while submitted");
      release();
    }
    await waitFor(page.locator(".message.assistant > p", { hasText: "You said" }), "some text");
    await waitFor(page.locator('.progress[data-progress="streaming"]'), "the streaming indicator");
    const deleted =
      mode === "sse" &&
      later(
        page.waitForResponse(
          (r) => r.request().method() === "DELETE" && r.url().endsWith("/stream"),
        ),
      );
    await button(page, "Stop").click();
    await waitFor(status(page, "ready"), "status ready after Stop");
    await waitFor(button(page, "Send"), "Send back in place of Stop");
    equal(await page.locator(".progress").count(), 0, "progress shown after Stop");
    const shown = (await page.locator(".message.assistant").innerText()).trim();
    if (!youSaid(slow).startsWith(shown) || shown.length >= youSaid(slow).length) {
      throw new Error(`not a part of the answer, cut by Stop: ${JSON.stringify(shown)}`);
    }
    if (deleted) {
      const response = await deleted;
      equal([response.status(), await response.json()], [200, { stopped: true }], "DELETE");
    }
    const id = await chatId(page);
    if (mode === "sse") {
      // the answer is over: nothing to resume, and history keeps exactly what was shown
      const resumed = resumeAfterReload(page, mode);
      await page.reload();
      equal(await resumed, "GET .../stream: HTTP 204", "the resume after Stop and a reload");
      await waitFor(page.locator(".message.user"), "the question, from history");
      const kept = await page.locator(".message.assistant").allInnerTexts();
      equal(kept.join("").trim(), shown, "the stopped answer after a reload");
    } else {
      // live, a turn cannot be cut (docs/live.md: the Live API has no such request): `abort`
      // only stops its streaming to this page. The turn goes on to its end on the server: a
      // second page on the chat gets it whole, while this one still shows what it had at Stop.
      const other = await page.context().newPage();
      await other.goto(page.url());
      await settled(other, { tools: [], answer: youSaid(slow) });
      await other.close();
      equal((await page.locator(".message.assistant").innerText()).trim(), shown, "text shown");
    }
    // the chat is free: the next message is answered
    await send(page, "hello");
    await settled(page, { tools: [], answer: youSaid("hello") });
    equal(await chatId(page), id, "the chat");
  },

  async regenerate(page, seen, mode) {
    await send(page, "hello");
    await settled(page, { tools: [], answer: youSaid("hello") });
    if (mode !== "sse") {
      // a live connection cannot be rewound (the server refuses regenerate): not offered
      equal(await button(page, "Regenerate").count(), 0, "a Regenerate button in live mode");
      return;
    }
    const first = await page.locator(".message.assistant").getAttribute("data-id");
    const posted = later(posting(page));
    await button(page, "Regenerate").click();
    equal((await posted).postDataJSON().trigger, "regenerate-message", "the request's trigger");
    await waitFor(page.locator(`.message.assistant:not([data-id="${first}"])`), "a new answer");
    await settled(page, { tools: [], answer: youSaid("hello") });
    const second = await page.locator(".message.assistant").getAttribute("data-id");
    equal(
      await shownMessages(page),
      [["user", "hello"], ["assistant", youSaid("hello")]],
      "the messages (the new answer in place of the first)",
    );
    const { body } = await serverHistory(page, await chatId(page));
    equal(
      body.map((m) => [m.role, m.role === "assistant" ? m.id : m.parts[0].text]),
      [["user", "hello"], ["assistant", second]],
      "the history: one answer, the new one",
    );
  },

  async retry(page, seen, mode) {
    // "explode" fails mid-answer; the failure stays in the message (also after a reload), and
    // Retry asks again: over SSE the answer is regenerated in place, live (a connection cannot be
    // rewound) the question is sent again as a new message. The scripted model fails again.
    await ask(page, "explode");
    const failed = { tools: [], answer: EXPLODED, error: `Error: ${MASKED}` };
    await settled(page, failed);
    const note = page.locator(".message.assistant .error-note");
    await page.reload();
    await waitFor(note, "the error note, from history");
    equal(await note.allInnerTexts(), [`Error: ${MASKED}`], "the error notes after the reload");
    const first = await page.locator(".message.assistant").getAttribute("data-id");
    if (mode === "sse") {
      const posted = later(posting(page));
      await button(page, "Retry").click();
      equal((await posted).postDataJSON().trigger, "regenerate-message", "the Retry's trigger");
      await waitFor(page.locator(`.message.assistant:not([data-id="${first}"])`), "a new answer");
      await settled(page, failed);
      equal(
        await shownMessages(page),
        [["user", "explode"], ["assistant", `${EXPLODED}\nError: ${MASKED}`]],
        "the messages after Retry",
      );
      const { body } = await serverHistory(page, await chatId(page));
      equal(body.map((m) => m.role), ["user", "assistant"], "the history's roles");
    } else {
      await button(page, "Retry").click();
      await waitFor(page.locator(".message.assistant").nth(1), "a second answer");
      await settled(page, failed);
      equal(
        (await shownMessages(page)).map(([role, text]) => [role, text.split("\n")[0]]),
        [
          ["user", "explode"],
          ["assistant", EXPLODED],
          ["user", "explode"],
          ["assistant", EXPLODED],
        ],
        "the messages after Retry (the question asked again)",
      );
    }
    await waitFor(button(page, "Retry"), "Retry, again");
  },

  async "closed-card"(page) {
    // A payment left waiting while the user sent another message: its card closes (no buttons),
    // and after a reload it shows why the server did not run it.
    await ask(page, "pay 5 to alice");
    await waitFor(card(page, "process_payment", "approval-requested"), "the approval");
    await send(page, "hello");
    await settled(page, {
      tools: [["process_payment", "approval-requested"]],
      answer: youSaid("hello"),
    });
    const closed = page.locator('.tool[data-tool="process_payment"][data-closed="true"]');
    await waitFor(closed, "the card closed");
    equal(await closed.locator(".closed-note").innerText(), CLOSED, "the closed card's note");
    equal(await closed.getByRole("button").count(), 0, "buttons on the closed card");
    await page.reload();
    const notRun = card(page, "process_payment", "output-error");
    await waitFor(notRun.filter({ hasText: NOT_RUN }), "the card's reason, from history");
    await settled(page, { tools: [["process_payment", "output-error"]], answer: youSaid("hello") });
  },

  async "chat-list"(page) {
    // Two chats in the list, newest first, with their titles; open the older; delete the other,
    // then the open one (which starts a new chat).
    await send(page, "hello");
    await settled(page, { tools: [], answer: youSaid("hello") });
    const older = await chatId(page);
    equal((await listedChats(page, 1)).titles, ["hello"], "the chat list after one answer");
    await button(await chatList(page), "+ New chat").click();
    await waitFor(page.locator(".chat-id code", { hasNotText: older }), "a new chat");
    equal(await page.locator(".message").count(), 0, "messages in the new chat");
    await ask(page, "What's the weather in Paris?");
    await settled(page, {
      tools: [["get_weather", "output-available"]],
      answer: `Here you go: get_weather: ${PARIS}.`,
    });
    const newer = await chatId(page);
    let { list, titles } = await listedChats(page, 2);
    equal(titles, ["What's the weather in Paris?", "hello"], "the chats, newest first");
    equal(
      await list.locator('[aria-current="page"] .title').allTextContents(),
      ["What's the weather in Paris?"],
      "the open chat, marked in the list",
    );
    await list.locator(".open-chat", { hasText: "hello" }).click();
    await waitFor(page.locator(".chat-id code", { hasText: older }), "the older chat open");
    await settled(page, { tools: [], answer: youSaid("hello") });
    equal(
      await shownMessages(page),
      [["user", "hello"], ["assistant", youSaid("hello")]],
      "the older chat's messages",
    );
    if (phone(page)) await list.waitFor({ state: "hidden", timeout: TIMEOUT_MS });
    ({ list } = await listedChats(page, 2));
    await button(list, "Delete chat: What's the weather in Paris?").click();
    equal((await listedChats(page, 1)).titles, ["hello"], "the chats after deleting the other");
    equal(await chatId(page), older, "the open chat");
    equal((await serverHistory(page, newer)).status, 404, "GET the deleted chat's messages");
    ({ list } = await listedChats(page, 1));
    await button(list, "Delete chat: hello").click();
    await listedChats(page, 0);
    await waitFor(list.getByText("No chats yet."), "the empty list");
    const started = await chatId(page);
    if (started === older) throw new Error("deleting the open chat left it open");
    equal(await page.locator(".message").count(), 0, "messages shown after deleting the open chat");
    equal((await serverHistory(page, older)).status, 404, "GET the deleted open chat's messages");
  },

  async "older-chats"(page) {
    // More chats than the server lists at once (50): the newest 50, then "Older chats" lists
    // the rest (the next page its Link header names), and the button goes.
    await listedChats(page, 0);
    await page.evaluate(async () => {
      for (let n = 1; n <= 51; n++) {
        const message = { id: "u1", role: "user", parts: [{ type: "text", text: `chat ${n}` }] };
        const body = { id: `older-${n}`, messages: [message], trigger: "submit-message" };
        const headers = { "content-type": "application/json" };
        const request = { method: "POST", headers, body: JSON.stringify(body) };
        await (await fetch("/agent/chat", request)).text();
      }
    });
    await page.reload();
    const { list, titles } = await listedChats(page, 50);
    equal([titles[0], titles[49]], ["chat 51", "chat 2"], "the first page, newest first");
    await button(list, "Older chats").click();
    equal((await listedChats(page, 51)).titles[50], "chat 1", "the oldest chat, after the rest");
    const more = await list.getByRole("button", { name: "Older chats" }).count();
    equal(more, 0, "the Older chats button, after the last page");
  },

  async "own-agent"(page) {
    // `adk-asgi web` on a user's agent (tests/packaging/test_web_command.py: the clock agent,
    // offline): the page says whose it is, offers the offline model's examples, answers, and
    // runs the agent's own tool.
    equal(await page.title(), "clock · adk-asgi", "the page's title");
    const examples = await page.locator(".examples button").allTextContents();
    equal(examples, ["Hello!", "explode"], "the example prompts");
    await ask(page, "Hello!");
    await settled(page, { tools: [], answer: 'You said: "Hello!".' });
    await send(page, 'call get_time {"city": "Rome"}');
    await settled(page, {
      tools: [["get_time", "output-available"]],
      answer: 'get_time returned {"city": "Rome", "time": "12:00"}.',
    });
  },

  async attachment(page) {
    // Files go with the message (the Attach button's file chooser): an image shows as a
    // thumbnail in the user's message, another file as a link with its name; both again after a
    // reload (from history). A file too large for a request is refused with a message.
    const choose = async (files) => {
      const chooser = later(page.waitForEvent("filechooser"));
      await button(page, "Attach files").click();
      await (await chooser).setFiles(files);
    };
    const big = { name: "big.png", mimeType: "image/png", buffer: Buffer.alloc(3 * 1024 * 1024) };
    await choose(big);
    await waitFor(page.getByText('"big.png" (3 MB) not attached'), "the too-large notice");
    equal(await page.locator(".attachments li").count(), 0, "attachments after a too-large file");
    await choose([
      { name: "square.png", mimeType: "image/png", buffer: png(48, 32) },
      { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("some notes\n") },
    ]);
    await waitFor(page.locator(".attachments li").nth(1), "two attachments");
    await send(page, "hello");
    const expectations = async (when) => {
      await settled(page, { tools: [], answer: youSaid("hello") });
      const user = page.locator(".message.user");
      const image = user.locator("img.thumb");
      await waitFor(image, `the thumbnail ${when}`);
      await until(
        page,
        () => document.querySelector(".message.user img.thumb")?.naturalWidth === 48,
        undefined,
        `the thumbnail loaded ${when}`,
      );
      const box = await image.boundingBox();
      if (!(box.width >= 40 && box.height >= 24)) {
        throw new Error(`the thumbnail ${when}: ${box.width} x ${box.height} px`);
      }
      equal(
        [await image.getAttribute("alt"), (await image.getAttribute("src")).split(",")[0]],
        ["square.png", "data:image/png;base64"],
        `the thumbnail ${when}`,
      );
      equal(
        (await user.locator("a.file").innerText()).trim(),
        "notes.txt",
        `the file link ${when}`,
      );
      equal(await user.locator("p").allInnerTexts(), ["hello"], `the user's text ${when}`);
    };
    await expectations("as sent");
    equal(await page.locator(".attachments li").count(), 0, "attachments left after sending");
    await page.reload();
    await expectations("after a reload");
  },

  async composer(page, seen, mode) {
    // The input is focused on load and after each send; Approve and Deny look different; on a
    // phone every control of the input bar and the cards is at least 44 px tall.
    const message = page.getByRole("textbox", { name: "Message" });
    const focused = (what) =>
      until(
        page,
        () => document.activeElement?.getAttribute("aria-label") === "Message",
        undefined,
        `the input focused ${what}`,
      );
    await focused("on load");
    // a reload of a chat not sent yet: the same (empty) chat, focused again, nothing fetched
    // that the server does not have (a 404 would be a console error, failing the run)
    const id = await chatId(page);
    await page.reload();
    await waitFor(page.locator(".chat-id code", { hasText: id }), "the same chat after a reload");
    await focused("after a reload");
    await message.pressSequentially("hello");
    await message.press("Enter");
    await settled(page, { tools: [], answer: youSaid("hello") });
    await focused("after sending with Enter");
    await ask(page, "pay 5 to alice");
    await waitFor(card(page, "process_payment", "approval-requested"), "the approval");
    await focused("after sending an example");
    const pending = card(page, "process_payment", "approval-requested");
    const approve = button(pending, "Approve");
    const deny = button(pending, "Deny");
    const look = (locator) =>
      locator.evaluate((b) => {
        const style = getComputedStyle(b);
        return { background: style.backgroundColor, color: style.color };
      });
    const [approveLook, denyLook] = [await look(approve), await look(deny)];
    if (approveLook.background === denyLook.background || approveLook.color === denyLook.color) {
      throw new Error(`Approve and Deny look alike: ${JSON.stringify([approveLook, denyLook])}`);
    }
    if (phone(page)) {
      for (const [locator, what] of [
        [approve, "Approve"],
        [deny, "Deny"],
        [button(page, "Send"), "Send"],
        [button(page, "Attach files"), "Attach files"],
        [message, "the input"],
        [button(page, "Chats"), "the Chats button"],
        [button(page, "Live"), "the Live mode button"],
        [button(page, "pay 5 to alice"), "an example"],
      ]) {
        await tapTarget(locator, what);
      }
    }
    await approve.click();
    await settled(page, {
      tools: [["process_payment", "output-available"]],
      answer: `Here you go: process_payment: ${paid(5, "alice")}.`,
    });
    await focused("after approving");
    if (phone(page) && mode === "sse") await tapTarget(button(page, "Regenerate"), "Regenerate");
  },

  async scroll(page) {
    // The messages follow a long answer to its end; scrolled up, the page leaves the user there
    // while the answer streams on (a "Latest" button takes them down); the input bar stays at
    // the bottom of the window throughout.
    const scroller = page.locator(".scroller");
    const height = page.viewportSize().height;
    const inputBarShown = async (when) => {
      const box = await page.getByRole("textbox", { name: "Message" }).boundingBox();
      if (!(box && box.y >= height - 160 && box.y + box.height <= height)) {
        throw new Error(`the input ${when}: ${JSON.stringify(box)}, not at the window's bottom`);
      }
    };
    const lastInView = async (when) => {
      const [last, view] = await Promise.all([
        page.locator(".message").last().boundingBox(),
        scroller.boundingBox(),
      ]);
      if (!(last.y + last.height <= view.y + view.height + 1)) {
        const end = last.y + last.height;
        throw new Error(`the last message ${when}: ends at ${end}, below the view`);
      }
    };
    const long = `tell me everything: ${"one more sentence to read. ".repeat(40)}`.trim();
    await send(page, long);
    await settled(page, { tools: [], answer: youSaid(long) });
    const overflow = await scroller.evaluate((e) => e.scrollHeight - e.clientHeight);
    if (!(overflow > 200)) throw new Error(`the messages overflow by ${overflow} px only`);
    await lastInView("after a long answer");
    await inputBarShown("after a long answer");

    const slow = `now slowly: ${"a few more words. ".repeat(16)}`.trim();
    await send(page, slow);
    const answer = page.locator(".message.assistant > p").last();
    await waitFor(page.locator(".message.assistant").nth(1).locator("p"), "the second answer");
    await scroller.evaluate((e) => (e.scrollTop = 0)); // the user scrolls up
    const start = (await answer.innerText()).length;
    await until(
      page,
      (n) => document.querySelectorAll(".message.assistant > p")[1]?.innerText.length >= n,
      start + 40,
      "the answer streaming on",
    );
    equal(await status(page, "streaming").count(), 1, "still streaming");
    equal(await scroller.evaluate((e) => e.scrollTop), 0, "the scroll position, left alone");
    await inputBarShown("scrolled up");
    await button(page, "↓ Latest").click();
    await settled(page, { tools: [], answer: youSaid(slow) });
    await lastInView("after ↓ Latest");
    equal(await button(page, "↓ Latest").count(), 0, "the Latest button at the end");
  },

  async tour(page) {
    // not a test: the README's screenshot (docs/demo.png, at the default 900x700): an earlier
    // chat in the list, then a weather answer, a track playing in the browser and a payment
    // awaiting approval
    await send(page, "hello");
    await settled(page, { tools: [], answer: youSaid("hello") });
    await button(await chatList(page), "+ New chat").click();
    await ask(page, "What's the weather in Paris?");
    await waitFor(page.getByText("Here you go: get_weather"), "the weather");
    await ask(page, "play track 2");
    await waitFor(page.getByText("Now playing: track 2"), "the music");
    await waitFor(page.locator('.status[data-status="ready"]'), "ready");
    await ask(page, "pay 5 to alice");
    await waitFor(card(page, "process_payment", "approval-requested"), "the approval");
    await listedChats(page, 2);
  },

  async hang() {
    // not a test: never ends, so the deadline has to end the run (test_demo_page.py checks it)
    await new Promise(() => {});
  },

  // tests/browser/metadata_page.py: the demo with docs/metadata.md's hook
  async metadata(page) {
    await ask(page, "What's the weather in Paris?");
    const expected = {
      tools: [["get_weather", "output-available"]],
      answer: `Here you go: get_weather: ${PARIS}.`,
    };
    await settled(page, expected);
    const facts = page.locator(".message.assistant .answer-facts");
    const shown = await facts.textContent();
    if (!/^scripted · [1-9][0-9]* tokens$/.test(shown)) {
      throw new Error(`the answer's facts: ${JSON.stringify(shown)}`);
    }
    await page.reload(); // history returns the metadata the stream sent
    await settled(page, expected);
    equal(await facts.textContent(), shown, "the answer's facts after a reload");
  },

  // tests/browser/features_page.py: a data card updated by id, a dynamic tool approved
  async features(page) {
    await send(page, "go");
    const weather = page.locator('.data-part[data-name="weather"] code');
    const final = JSON.stringify({ city: "Paris", status: "sunny", temperature: 21 });
    await decide(page, "order_item", "Approve");
    const expected = {
      tools: [
        ["get_weather", "output-available"],
        ["order_item", "output-available"],
      ],
      answer: "All set.",
    };
    await settled(page, expected);
    equal(await weather.allTextContents(), [final], "the weather card, updated in place");
    const facts = page.locator(".message.assistant .answer-facts");
    const shown = await facts.allTextContents();
    if (!shown.length || !shown.every((f) => /^scripted · [1-9][0-9]* tokens$/.test(f))) {
      throw new Error(`the answer's facts: ${JSON.stringify(shown)}`);
    }
    await page.reload(); // history: the card in place, the dynamic tool's part, the metadata
    await settled(page, expected);
    equal(await weather.allTextContents(), [final], "the weather card after a reload");
    equal(await facts.allTextContents(), shown, "the answer's facts after a reload");
  },

  // tests/browser/features_page.py: a tool's progress (preliminary outputs, SSE)
  async progress(page) {
    await send(page, "forecast");
    const output = page.locator('.tool[data-tool="get_forecast"] .output');
    await waitFor(output.filter({ hasText: "Fetching the weather in Paris…" }), "the progress");
    await page.evaluate(() => fetch("/test/release", { method: "POST" }));
    await settled(page, { tools: [["get_forecast", "output-available"]], answer: "Forecast done." });
    const result = JSON.stringify({ city: "Paris", temperature: 20 });
    equal(await output.allTextContents(), [`output: ${result}`], "the forecast's result");
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

const USAGE =
  `usage: run.mjs BASE_URL ${Object.keys(MODES).join("|")} SCENARIO [--deadline-ms N] ` +
  "[--viewport WIDTHxHEIGHT] [--screenshot PATH] [--failure-screenshot PATH]\n" +
  "       run.mjs --serve\n" +
  `scenarios: ${Object.keys(SCENARIOS).join(", ")}`;

/** The run that `args` (a command line, less node and this script) asks for, its deadline
 * counted from now; null when they ask for none. */
function aRun(args) {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        screenshot: { type: "string" },
        "failure-screenshot": { type: "string" },
        "deadline-ms": { type: "string", default: String(DEADLINE_MS) },
        viewport: { type: "string", default: VIEWPORT },
      },
    });
  } catch {
    return null;
  }
  const { positionals, values } = parsed;
  const [base, mode, name] = positionals;
  const deadlineMs = Number(values["deadline-ms"]);
  const [width, height] = (values.viewport.match(/^(\d+)x(\d+)$/) ?? []).slice(1).map(Number);
  if (!base || !MODES[mode] || !SCENARIOS[name] || !(deadlineMs > 0) || !width) return null;
  const viewport = { width, height };
  return { base, mode, name, values, viewport, deadlineMs, deadline: Date.now() + deadlineMs };
}

/** Chromium (`executable`), started before `deadline`; one that starts too late is closed. */
async function launch(executable, deadline) {
  const launching = chromium.launch({ executablePath: executable, args: CHROMIUM_ARGS });
  try {
    return await beforeDeadline(launching, deadline, "starting Chromium");
  } catch (error) {
    launching.then((browser) => browser.close()).catch(() => {});
    throw error;
  }
}

/** One run: the browser `browserFor(executable, deadline)` gives, then the scenario in a new
 * context of it. Its exit code; what it reports goes to `say`, a line at a time. */
async function runIn(browserFor, request, env, say) {
  let browser;
  try {
    browser = await browserFor(env.CHROMIUM ?? CHROMIUM, request.deadline);
  } catch (error) {
    say(`${request.name} (${request.mode}): the browser never started: ${error.message}`);
    return BROWSER_NEVER_STARTED;
  }
  return run(browser, request, env, say);
}

/** `node run.mjs BASE_URL MODE SCENARIO ...`: a browser of its own, started and closed. */
async function once(args) {
  const request = aRun(args);
  if (!request) {
    console.error(USAGE);
    process.exit(2);
  }
  const { name, mode, deadlineMs } = request;
  // Whatever hangs (closing the browser included), the process ends soon after the deadline.
  setTimeout(() => {
    console.error(`${name} (${mode}): still running ${SCREENSHOT_MS} ms after the deadline`);
    process.exit(1);
  }, deadlineMs + 2 * SCREENSHOT_MS).unref();
  let browser;
  const started = async (executable, deadline) => (browser = await launch(executable, deadline));
  const code = await runIn(started, request, process.env, (line) => console.error(line));
  await browser?.close().catch(() => {});
  // A scenario cut off by the deadline may still hold timers: leave now, with the verdict.
  process.exit(code);
}

/** `node run.mjs --serve` (tests/browser/kept_browser.py): Chromium started once, for many runs.
 * Each line of stdin is a run, `{"args": [command line], "env": {CHROMIUM, FRAMES: overrides of
 * this process's environment}}`; each is answered with a line of stdout, `{"code", "stdout",
 * "stderr"}`: what a run of its own exits with and prints. Each run has a new browser context
 * (its own cookies, storage and permissions: all a fresh browser gave the page) in the kept
 * browser. A run that fails may leave anything behind (a scenario going on past its deadline, a
 * browser gone), so its answer says `"closing": true` and the process ends once stdin does: the
 * caller starts another for the next run. So does a run still going 2 x SCREENSHOT_MS past its
 * deadline: answered as a run of its own would have exited, then the process exits. What a run
 * says also goes to stderr as it does, for a caller that has to kill the process. */
async function serve() {
  let kept; // { executable, browser }
  const browserFor = async (executable, deadline) => {
    if (kept?.executable !== executable || !kept.browser.isConnected()) {
      await kept?.browser.close().catch(() => {});
      kept = undefined;
      kept = { executable, browser: await launch(executable, deadline) };
    }
    return kept.browser;
  };
  process.once("SIGTERM", async () => {
    // (kept_browser.py's last resort before SIGKILL, for a run that does not end)
    await kept?.browser.close().catch(() => {});
    process.exit(143);
  });
  await serveLines(async ({ args, env }) => {
    const reply = { code: 2, stdout: "", stderr: "" };
    const say = (line) => {
      reply.stderr += `${line}\n`;
      process.stderr.write(`${line}\n`);
    };
    const request = aRun(args);
    if (!request) {
      say(USAGE);
      return reply;
    }
    const { name, mode, deadlineMs } = request;
    const watchdog = setTimeout(() => {
      say(`${name} (${mode}): still running ${SCREENSHOT_MS} ms after the deadline`);
      const line = JSON.stringify({ ...reply, code: 1, closing: true });
      process.stdout.write(`${line}\n`, () => process.exit(1));
    }, deadlineMs + 2 * SCREENSHOT_MS);
    try {
      reply.code = await runIn(browserFor, request, { ...process.env, ...env }, say);
    } finally {
      clearTimeout(watchdog);
    }
    return reply.code === 0 ? reply : { ...reply, closing: true };
  });
  await kept?.browser.close().catch(() => {});
  process.exit(0);
}

/** The scenario in a new context of `browser` (closed after): its exit code. */
async function run(browser, request, env, say) {
  const { viewport } = request;
  let context;
  try {
    context = await browser.newContext({
      geolocation: HERE,
      permissions: ["geolocation", "microphone"],
      viewport,
      isMobile: viewport.width < 640, // a phone: touch, and the page's meta viewport applies
      hasTouch: viewport.width < 640,
    });
    return await runPage(await context.newPage(), request, env, say);
  } catch (error) {
    say(`${request.name} (${request.mode}) failed: ${error.message}`); // (no page to show)
    return 1;
  } finally {
    await context?.close().catch(() => {});
  }
}

async function runPage(page, { base, mode, name, values, deadline, deadlineMs }, env, say) {
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
  page.setDefaultTimeout(TIMEOUT_MS);
  const scenario = async () => {
    await page.goto(base);
    const choice = page.getByRole("button", { name: MODES[mode], exact: true });
    await waitFor(choice, `the ${MODES[mode]} button`);
    // not clicked when already chosen: the page's input keeps the focus it has on load
    if ((await choice.getAttribute("aria-pressed")) !== "true") await choice.click();
    const chosen = page.getByRole("button", { name: MODES[mode], exact: true, pressed: true });
    await waitFor(chosen, `mode ${mode}`);
    await SCENARIOS[name](page, seen, mode);
    if (problems.length) throw new Error("the page reported errors");
    if (values.screenshot) await page.screenshot({ path: values.screenshot, fullPage: true });
  };
  try {
    await beforeDeadline(scenario(), deadline, name);
    return 0;
  } catch (error) {
    const reason =
      error instanceof DeadlinePassed ? `not done within its deadline of ${deadlineMs} ms` : "";
    say(`${name} (${mode}) failed: ${reason || error.message}`);
    const shown = await page
      .locator("main")
      .innerText({ timeout: SCREENSHOT_MS })
      .catch(() => "(nothing)");
    say(`the page shows:\n${shown.slice(0, 2000)}\n`);
    for (const line of problems) say(line);
    if (seen.frames.length) {
      say(`WebSocket frames (the last 40; and ${seen.audioFrames} audio frames in):`);
      say(seen.frames.slice(-(Number(env.FRAMES) || 40)).join("\n"));
    }
    const path = values["failure-screenshot"];
    if (path) {
      await page
        .screenshot({ path, fullPage: true, timeout: SCREENSHOT_MS })
        .catch((e) => say(`no screenshot: ${e.message}`));
    }
    return 1;
  }
}

if (process.argv[2] === "--serve" && process.argv.length === 3) await serve();
else await once(process.argv.slice(2));
