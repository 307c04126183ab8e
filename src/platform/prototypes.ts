/**
 * The built-in prototypes that hot code calls methods through: `"…".charCodeAt`, `[].push`,
 * `/…/.exec` and the rest are looked up on these objects.
 */
const builtins: readonly object[] = [
  Object.prototype,
  Function.prototype,
  Array.prototype,
  String.prototype,
  Number.prototype,
  Boolean.prototype,
  RegExp.prototype,
  Map.prototype,
  Set.prototype,
  Promise.prototype,
  Error.prototype,
  Date.prototype,
];

/**
 * Puts the built-in prototypes back in V8's fast mode, once every module is loaded.
 *
 * Defining a subclass of a built-in (`class VerbatimString extends String`, in ioredis's RESP
 * decoder) puts the parent's prototype in V8's set-up mode, with its properties in a dictionary,
 * until an object that inherits from it has a property stored; ioredis makes one only for a RESP3
 * verbatim-string reply, which Warden never asks for. Until then V8's optimizing compiler cannot
 * fold a method's look-up on that prototype, and every `charCodeAt` or `slice` site of
 * the detectors went through the generic load IC: a gateway with Redis counters ran 37 % more
 * instructions a call with the guardrails on (docs/performance.md, "String.prototype in
 * dictionary mode"). A store into an object made from the prototype ends its set-up.
 */
export function settleBuiltinPrototypes(): void {
  for (const prototype of builtins) {
    const heir: { settled?: boolean } = Object.create(prototype);
    heir.settled = true;
  }
}
