// What the server says of the page (GET page.json, next to the page): its title, its example
// prompts and a line about it. The demo app serves the demo's, `adk-asgi web` your agent's.
export const DEFAULTS = { title: "adk-asgi", examples: [], intro: null };

/** The page's settings, once `loadPage()` has read them. */
export let page = DEFAULTS;

export async function loadPage() {
  try {
    const response = await fetch("page.json");
    if (response.ok) page = { ...DEFAULTS, ...(await response.json()) };
  } catch {
    // none: the defaults
  }
  document.title = page.title;
}
