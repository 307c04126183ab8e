import { spawn, type ChildProcess } from "node:child_process";

export interface Spawned {
  child: ChildProcess;
  /** The port the process announced in its log. */
  port: number;
  output(): string;
  stop(): Promise<number | null>;
}

/**
 * Runs `node src/main.ts <command>` with `env` over this process's environment (less `unset`),
 * and resolves once the log line `msg` announces a port.
 */
export function spawnWarden(
  command: string[],
  env: Record<string, string>,
  msg: string,
  unset: string[] = [],
  options: { /** In a process group of its own, as a terminal runs it: signal `-child.pid` to reach the group. */ detached?: boolean } = {},
): Promise<Spawned> {
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !unset.includes(name)) merged[name] = value;
  }
  const child = spawn(process.execPath, ["src/main.ts", ...command], { env: { ...merged, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: options.detached ?? false });
  let output = "";
  const pattern = new RegExp(`"port":(\\d+),"msg":"${msg}"`);
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`exited with ${code}: ${output}`));
    // A process that could not be spawned at all (EAGAIN, EMFILE…) fails this start, not the test worker.
    const onError = (err: Error) => reject(new Error(`could not start warden ${command.join(" ")}: ${err.message}`, { cause: err }));
    child.once("exit", onExit);
    child.once("error", onError);
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const match = pattern.exec(output);
      if (match) {
        child.off("exit", onExit);
        child.off("error", onError);
        resolve({
          child,
          port: Number(match[1]),
          output: () => output,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null || child.signalCode !== null) return done(child.exitCode);
              child.once("exit", (code) => done(code));
              child.kill("SIGTERM");
            }),
        });
      }
    });
  });
}
