import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run build` writes dist/, which demo_app.py serves at `/`. For `npm run dev`, run the demo
// app too (`make demo`): the dev server forwards the agent's routes to it.
export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/agent": { target: "http://127.0.0.1:8000", ws: true } } },
});
