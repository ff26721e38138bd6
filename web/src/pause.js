// A promise that settles after `ms` milliseconds: the page's waits (a socket's close, a retry).
export const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
