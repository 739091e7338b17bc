// Child processes for the suite: run-to-completion with a timeout, the ADJOINT_RESULT line
// parser, free loopback ports, and a long-running workerd server.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

// Servers still running if the runner dies early are killed on the way out.
const servers = new Set();
process.on('exit', () => {
  for (const child of servers) child.kill('SIGKILL');
});

/** Runs cmd to completion; resolves { code, signal, stdout, stderr } (rejects only if it cannot start). */
export function run(cmd, args, { cwd, env, timeoutMs = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '',
      stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => (clearTimeout(timer), reject(new Error(`cannot run ${cmd}: ${e.message}`))));
    child.on('close', (code, signal) => (clearTimeout(timer), resolve({ code, signal, stdout, stderr })));
  });
}

/** The JSON after the last `ADJOINT_RESULT ` line, or an error quoting the output. */
export function parseResult(what, { code, signal, stdout, stderr }) {
  const line = stdout
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('ADJOINT_RESULT '));
  if (line === undefined) {
    const tail = (stderr || stdout).trim().split('\n').slice(-15).join('\n');
    throw new Error(`${what} exited with ${signal ?? code} and no result:\n${tail}`);
  }
  return JSON.parse(line.slice('ADJOINT_RESULT '.length));
}

/** A loopback port that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `workerd serve config` on 127.0.0.1:<free port> (socket "http") and waits until it
 * answers. Returns { url, stop, output() }.
 */
export async function startWorkerd(workerd, config, { env, cwd, readyPath = '/', timeoutMs = 60_000 } = {}) {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(workerd, ['serve', config, '--socket-addr', `http=127.0.0.1:${port}`], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '',
      exited = null;
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    servers.add(child);
    child.on('exit', (code, signal) => ((exited = signal ?? code), servers.delete(child)));
    child.on('error', (e) => (exited = e.message));
    const url = `http://127.0.0.1:${port}`;
    const stop = () =>
      new Promise((resolve) => {
        if (exited !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      });
    const deadline = Date.now() + timeoutMs;
    while (exited === null && Date.now() < deadline) {
      try {
        await fetch(url + readyPath, { signal: AbortSignal.timeout(2000) });
        return { url, stop, output: () => output };
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await stop();
    // A port taken between freePort() and bind: try another one.
    if (attempt < 3 && /address already in use/i.test(output)) continue;
    throw new Error(
      `workerd did not start (${exited === null ? 'timeout' : `exit ${exited}`}):\n${output.trim().split('\n').slice(-20).join('\n')}`,
    );
  }
}
