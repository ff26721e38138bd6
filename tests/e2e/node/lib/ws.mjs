// WebSocket plumbing for the chat driver's live modes ("ws" and "ws-js"):
//   * a `ws` WebSocket subclass that sends the spec's cookie (and any extra handshake headers) in
//     the opening handshake, as a browser sends its cookies, and records every data frame;
//   * loading a transport ES module served over HTTP (the server's own /agent/transport.js).

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import WebSocket from 'ws';

import { errorText } from './cli.mjs';

const textDecoder = new TextDecoder();

function byteLengthOf(data) {
  if (Array.isArray(data)) {
    return data.reduce((sum, part) => sum + byteLengthOf(part), 0);
  }
  if (typeof data === 'string') {
    return Buffer.byteLength(data);
  }
  return data?.byteLength ?? data?.size ?? 0; // Buffer, ArrayBuffer, views; Blob
}

function textOf(data) {
  if (typeof data === 'string') {
    return data;
  }
  if (Array.isArray(data)) {
    return Buffer.concat(data).toString('utf8');
  }
  return textDecoder.decode(data);
}

/** A data frame as recorded: text parsed as JSON (or `{text}` if it is not JSON); binary as
 *  `{binary: byteLength}`. */
export function recordedFrame(data, isBinary) {
  if (isBinary) {
    return { binary: byteLengthOf(data) };
  }
  const text = textOf(data);
  try {
    return JSON.parse(text);
  } catch {
    return { text };
  }
}

/** The value of header `name` (case-insensitive) in a plain headers object, or undefined. */
export function headerValue(headers, name) {
  if (headers == null) {
    return undefined;
  }
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted) {
      return value;
    }
  }
  return undefined;
}

/**
 * A WebSocket constructor (for a transport's `webSocket` option): the `ws` package's WebSocket
 * with `handshakeHeaders` (e.g. `{cookie}`) added to the opening handshake, reporting to
 * `recorder`:
 *   recorder.onSocket(info)            once per socket; `info` is then updated in place
 *                                      ({url, opened, closeCode, closeReason, error})
 *   recorder.onFrame(dir, frame, raw)  every data frame, dir "out" | "in"
 */
export function recordingWebSocketClass(handshakeHeaders, recorder) {
  const headers = { ...handshakeHeaders };
  return class RecordingWebSocket extends WebSocket {
    constructor(url, protocols) {
      super(url, protocols, Object.keys(headers).length > 0 ? { headers } : {});
      const info = {
        url: String(url),
        opened: false,
        closeCode: null,
        closeReason: null,
        error: null,
      };
      recorder.onSocket(info, this);
      this.on('open', () => {
        info.opened = true;
        recorder.onActivity();
      });
      this.on('message', (data, isBinary) => {
        recorder.onFrame('in', recordedFrame(data, isBinary));
      });
      // Also keeps an 'error' event from crashing the process if a transport sets no handler.
      this.on('error', err => {
        info.error = errorText(err);
        recorder.onActivity();
      });
      this.on('close', (code, reason) => {
        info.closeCode = code;
        info.closeReason = reason?.toString('utf8') ?? '';
        recorder.onActivity();
      });
    }

    send(data, ...rest) {
      recorder.onFrame('out', recordedFrame(data, typeof data !== 'string'));
      return super.send(data, ...rest);
    }
  };
}

/**
 * Fetches an ES module from `url`, writes it to a temporary file and imports it.
 * Returns `{module, record}` where record = {url, status, contentType, bytes}.
 */
export async function importModuleFromUrl(url, headers = {}) {
  const record = { url, status: null, contentType: null, bytes: null };
  const response = await globalThis.fetch(url, { headers });
  record.status = response.status;
  record.contentType = response.headers.get('content-type');
  const text = await response.text();
  record.bytes = Buffer.byteLength(text);
  if (!response.ok) {
    const err = new Error(
      `GET ${url} answered ${response.status}: ${text.slice(0, 500)}`,
    );
    err.record = record;
    throw err;
  }
  const dir = await mkdtemp(join(tmpdir(), 'adk-live-transport-'));
  try {
    const file = join(dir, 'transport.mjs');
    await writeFile(file, text, 'utf8');
    const module = await import(pathToFileURL(file).href);
    return { module, record };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Resolves once every socket in `sockets` is CLOSED, or after `ms`. */
export function waitSocketsClosed(sockets, ms) {
  return new Promise(resolve => {
    const deadline = Date.now() + ms;
    const tick = () => {
      if (sockets.every(s => s.readyState === WebSocket.CLOSED) || Date.now() >= deadline) {
        resolve();
        return;
      }
      setTimeout(tick, 10);
    };
    tick();
  });
}
