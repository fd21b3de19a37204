// Shared by the Node compatibility checks (compat_test.mjs, structured_test.mjs): their command line, starting
// `lockstep serve` on a free port, and one line per check.
import { spawn } from "node:child_process";

// The "--name value" pairs of the command line. Exits 2 with `usage` unless --binary and --model are given.
export function parseArgs(usage) {
  const args = Object.fromEntries(
    process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
  );
  if (!args.binary || !args.model) {
    console.error(`usage: ${usage}`);
    process.exit(2);
  }
  return args;
}

// Starts `BINARY serve -m MODEL --port 0 EXTRA...` and resolves to { child, url, log() } once it prints its
// "serving" line; rejects if it exits first or has not started within 60 s.
export function startServer(binary, model, extraArgs) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ["serve", "-m", model, "--port", "0", ...extraArgs], { stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    const onData = (d) => {
      log += d.toString();
      const m = log.match(/lockstep: serving .* on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) resolve({ child, url: m[1], log: () => log });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`server exited early (${code}):\n${log}`)));
    setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 60000);
  });
}

// Runs one check: prints "ok   NAME", or "FAIL NAME: error" and rethrows.
export async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.stack || e}`);
    throw e;
  }
}
