import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";

/**
 * Bytes a caller sent that cannot be decoded are the caller's bad input (invalid_argument: HTTP
 * 400 on Connect, grpc-status 3 on gRPC and gRPC-Web). connect-es reports three such failures as
 * `internal`, before any interceptor runs: protobuf it cannot parse, an envelope flagged as
 * compressed without an encoding, and a compressed body that does not inflate. JSON it cannot
 * parse is already invalid_argument.
 */
const undecodable = [/^parse binary: /, /^received compressed envelope, but do not know how to decompress$/, /^decompression failed$/];

export function isUndecodableInput(err: ConnectError): boolean {
  return err.code === Code.Internal && undecodable.some((pattern) => pattern.test(err.rawMessage));
}

/**
 * A request gate that corrects those codes. Every protocol handler of connect-es ends a failed call
 * with `context.abort(error)` before it writes the error's status (Connect) or trailer (gRPC,
 * gRPC-Web), on the same context it gives the gate: the gate wraps that abort, so the code is
 * corrected in the one place all three doors share, whatever else aborted the call first (its
 * deadline, say). `abort` is connect-es' own (HandlerContextController), not in the public type.
 */
export function undecodableInputGate(): (context: HandlerContext) => void {
  return (context) => {
    const controller = context as HandlerContext & { abort?: (reason?: unknown) => void };
    const abort = controller.abort;
    if (typeof abort !== "function") return;
    controller.abort = (reason?: unknown) => {
      if (reason instanceof ConnectError && isUndecodableInput(reason)) {
        // connect-es declares `code` readonly, but reads it only after the abort: see above.
        (reason as { code: Code }).code = Code.InvalidArgument;
      }
      abort.call(context, reason);
    };
  };
}
