/**
 * A server side that writes a large answer as fast as its reader lets it, in 64 KB pieces, for
 * tests that a reader which does not read holds the writer back.
 */
import type http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

export interface HeldBackWriter {
  /** Writes `total` bytes of "a" into `res` (its head already written), then ends it. */
  write(res: http.ServerResponse): void;
  /** Bytes written so far. */
  readonly sent: number;
  /** Resolves once the writer has stopped: waiting for a drain that does not come, or done. */
  stalled(): Promise<void>;
}

export function heldBackWriter(total: number): HeldBackWriter {
  const piece = Buffer.alloc(64 * 1024, "a");
  let sent = 0;
  let waiting = false;
  return {
    write(res) {
      const pump = (): void => {
        waiting = false;
        while (sent < total) {
          sent += piece.length;
          if (!res.write(piece)) {
            waiting = true;
            res.once("drain", pump);
            return;
          }
        }
        res.end();
      };
      pump();
    },
    get sent() {
      return sent;
    },
    async stalled() {
      for (let last = -1; sent < total && !(waiting && sent === last); await sleep(50)) last = sent;
    },
  };
}
