import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The one error vocabulary: every failure is a ConnectError with a code. HTTP doors map the
 * code to a status with this table and nowhere else.
 */
const httpStatusByCode: Record<Code, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

export function httpStatusOf(code: Code): number {
  return httpStatusByCode[code] ?? 500;
}

/** The Connect name of a code, as in "invalid_argument". */
export function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * Openlayer clients retry 408, 409, 429 and 5xx unless told not to. A conflict or an internal
 * error will fail the same way again, so those carry `x-should-retry: false`.
 */
export function retryIsFutile(code: Code): boolean {
  const status = httpStatusOf(code);
  return status === 409 || status === 500 || status === 501;
}

export const invalidArgument = (message: string) => new ConnectError(message, Code.InvalidArgument);
export const notFound = (message: string) => new ConnectError(message, Code.NotFound);
export const alreadyExists = (message: string) => new ConnectError(message, Code.AlreadyExists);
export const permissionDenied = (message: string) => new ConnectError(message, Code.PermissionDenied);
export const unauthenticated = (message: string) => new ConnectError(message, Code.Unauthenticated);
export const unavailable = (message: string) => new ConnectError(message, Code.Unavailable);

/** Any thrown value as a ConnectError; what is not one already is an internal error. */
export function asConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return new ConnectError("Internal error", Code.Internal, undefined, undefined, err);
}
