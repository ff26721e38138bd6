#!/usr/bin/env node
// Chats with the Next.js example (examples/nextjs, under `next start`) in Debian's Chromium,
// headless, driven by playwright-core (a devDependency of web/), as a user would: a message over
// SSE, a payment approved, one denied, then live mode and a message over the WebSocket; every
// request goes to the Next.js server, whose rewrite hands it to the agent. test_nextjs_app.py runs
// it; by hand, against `npm start` and the agent (examples/nextjs/README.md):
//
//   node tests/recipes/nextjs_page.mjs http://localhost:3000
//
// It waits for each answer's exact text, then prints what the page shows and what went over the
// wire, as JSON on stdout, for the test to compare whole. Exit code 0 when the run went through;
// 1 when something did not show in time or the run passed its deadline (the reason, the page's
// console errors and its text on stderr, a screenshot at --failure-screenshot); 2 for a usage
// error.
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const require = createRequire(new URL("../../web/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"];
const TIMEOUT_MS = 10_000;

// What the offline model says (adk_asgi.testing.echo) and the example's tool returns.
const youSaid = (text) => `You said: "${text}".`;
const PAY = 'call process_payment {"amount": 5, "recipient": "alice"}';
const PAID = 'process_payment returned {"status": "sent", "amount": 5, "recipient": "alice"}.';
const REFUSE = 'call process_payment {"amount": 7, "recipient": "bob"}';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "failure-screenshot": { type: "string" },
    "deadline-ms": { type: "string", default: "40000" },
  },
});
if (positionals.length !== 1) {
  console.error("usage: nextjs_page.mjs <the Next.js server's URL> [--failure-screenshot PATH]");
  process.exit(2);
}
const [base] = positionals;

const assistantSaid = (page, text) =>
  page
    .locator('.message[data-role="assistant"] p')
    .filter({ hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) });

async function shows(locator, what) {
  try {
    await locator.waitFor({ timeout: TIMEOUT_MS });
  } catch {
    throw new Error(`not shown within ${TIMEOUT_MS} ms: ${what}`);
  }
}

async function send(page, text) {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("button", { name: "Send", exact: true }).click();
}

/** Send `text`; wait for the card asking for approval, press `answer`, wait for `after`. */
async function answerPayment(page, text, answer, state, after) {
  await send(page, text);
  const card = page.locator('.tool[data-state="approval-requested"]');
  await shows(card, `the approval card for ${text}`);
  await card.getByRole("button", { name: answer, exact: true }).click();
  await shows(page.locator(`.tool[data-state="${state}"]`).last(), `a card in ${state}`);
  await shows(after, "the model's answer after the approval");
}

/** What the page shows: each message's role and parts (its texts, and its tool cards). */
function transcript(page) {
  return page.locator(".message").evaluateAll((all) =>
    all.map((m) => ({
      role: m.dataset.role,
      parts: [...m.querySelectorAll(":scope > p, :scope > .tool")].map((el) =>
        el.matches(".tool")
          ? {
              state: el.dataset.state,
              text: el.innerText.replace(/\n+/g, "\n").trim(),
            }
          : el.textContent,
      ),
    })),
  );
}

async function run(browser, wire) {
  const page = await browser.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") wire.consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => wire.consoleErrors.push(String(e)));
  page.on("response", (r) => {
    const url = new URL(r.url());
    if (url.pathname.startsWith("/agent/")) {
      wire.http.push([r.request().method(), url.origin, url.pathname, r.status()]);
    }
  });
  page.on("websocket", (socket) => {
    const seen = { url: socket.url(), framesReceived: 0 };
    wire.webSockets.push(seen);
    socket.on("framereceived", () => (seen.framesReceived += 1));
  });
  try {
    await page.goto(base);
    await shows(page.getByRole("button", { name: "Mode: SSE" }), "the chat");

    await send(page, "Hello from Next.js");
    await shows(assistantSaid(page, youSaid("Hello from Next.js")), "the answer over SSE");
    await answerPayment(page, PAY, "Approve", "output-available", assistantSaid(page, PAID));
    const refused = page.locator('.message[data-role="assistant"] p').filter({
      hasText: /^process_payment returned .*\.$/,
    });
    await answerPayment(page, REFUSE, "Deny", "output-denied", refused.nth(1));

    await page.getByRole("button", { name: "Mode: SSE" }).click();
    await shows(page.getByRole("button", { name: "Mode: Live" }), "live mode");
    await send(page, "Hello over the socket");
    await shows(assistantSaid(page, youSaid("Hello over the socket")), "the answer in live mode");
    await shows(page.getByRole("button", { name: "Send", disabled: false }), "the chat ready");
    return await transcript(page);
  } catch (error) {
    if (values["failure-screenshot"]) {
      await page.screenshot({ path: values["failure-screenshot"] }).catch(() => {});
    }
    const text = await page.locator("body").innerText().catch(() => "(no page)");
    error.message += `\nthe page's console errors: ${JSON.stringify(wire.consoleErrors)}`;
    error.message += `\nthe page shows:\n${text}`;
    throw error;
  }
}

const wire = { http: [], webSockets: [], consoleErrors: [] };
const deadlineMs = Number(values["deadline-ms"]);
let browser;
const timer = setTimeout(() => {
  console.error(`the run passed its deadline (${deadlineMs} ms)`);
  process.exit(1);
}, deadlineMs);
try {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const messages = await run(browser, wire);
  console.log(JSON.stringify({ messages, ...wire }, null, 2));
} catch (error) {
  console.error(error.message);
  process.exitCode = 1;
} finally {
  await browser?.close().catch(() => {});
  clearTimeout(timer);
}
