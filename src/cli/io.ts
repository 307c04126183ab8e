/** Where a command writes: the process's streams, or a test's buffers. */
export interface Output {
  write(text: string): unknown;
}

export interface Io {
  stdout: Output;
  stderr: Output;
  /** The directory relative paths are read and written from. */
  cwd: string;
}

/** A command line the CLI cannot run: printed with a pointer to --help, exit status 2. */
export class UsageError extends Error {}
