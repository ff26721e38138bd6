// The agent's address, as this Next.js server reaches it. Read by `next build`: `next start`
// forwards to the address the app was built with.
const AGENT_URL = process.env.AGENT_URL ?? "http://127.0.0.1:8000";

/** @type {import("next").NextConfig} */
module.exports = {
  async rewrites() {
    // The page's requests to /agent/... (the chat's POST, the live WebSocket, the history) go to
    // this server, which hands them to the agent: one origin, so no CORS, and the agent's
    // identity cookie is first-party.
    return [{ source: "/agent/:path*", destination: `${AGENT_URL}/agent/:path*` }];
  },
};
