// The service the tests talk to: COMPACTOR_URL when given (the Python suite passes its
// own live server), else `compactor serve` started here on a free loopback port with a
// temporary SQLite database (COMPACTOR_BIN, default ../../.venv/bin/compactor).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function waitUntilHealthy(url, child, deadlineMs) {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`compactor serve exited with ${child.exitCode}`);
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`compactor serve did not answer on ${url} in ${deadlineMs} ms`);
}

/** Starts (or finds) the service; resolves to { url, stop }. */
export async function startService() {
  if (process.env.COMPACTOR_URL) return { url: process.env.COMPACTOR_URL, stop: async () => {} };
  const bin = process.env.COMPACTOR_BIN ?? join(repo, ".venv", "bin", "compactor");
  const dir = mkdtempSync(join(tmpdir(), "compactor-ts-"));
  const port = await freePort();
  const child = spawn(bin, ["serve", "--host", "127.0.0.1", "--port", String(port)], {
    env: { ...process.env, COMPACTOR_DATABASE_URL: `sqlite:///${join(dir, "compactor.db")}` },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (chunk) => {
    log += chunk;
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntilHealthy(url, child, 60_000);
  } catch (error) {
    child.kill("SIGTERM");
    throw new Error(`${error.message}\n${log}`);
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((done) => child.once("exit", done));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
