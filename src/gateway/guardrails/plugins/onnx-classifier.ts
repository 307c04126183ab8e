import { access } from "node:fs/promises";
import { loadWordPieceTokenizer, type WordPieceTokenizer } from "./wordpiece-tokenizer.ts";

/**
 * Plug-in: an operator-supplied ONNX text classifier (a BERT-family sequence-classification model
 * exported to ONNX, with its `tokenizer.json`), run in process by `onnxruntime-node`.
 *
 * `onnxruntime-node` is NOT a dependency of Warden: its install script downloads CUDA libraries
 * from outside the npm registry on Linux x64, which this project's machines cannot reach. An
 * operator who wants the plug-in installs it next to Warden (`npm install onnxruntime-node`,
 * `--onnxruntime-node-install=skip` where there is no network beyond npm), and the plug-in loads
 * it with a dynamic `import()`. When the package, the model or the tokenizer is missing or
 * unusable, `loadOnnxClassifier` resolves to `{ available: false, reason }` and logs one warning:
 * it never throws, so start-up and `npm install` are never broken by it.
 */

/** The part of onnxruntime-node's API the plug-in uses. */
export interface OrtTensor {
  readonly data: ArrayLike<number | bigint>;
  readonly dims: readonly number[];
}

export interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
}

export interface OrtRuntime {
  InferenceSession: { create(path: string, options?: Record<string, unknown>): Promise<OrtSession> };
  Tensor: new (type: "int64", data: BigInt64Array, dims: readonly number[]) => OrtTensor;
}

export interface OnnxClassifierOptions {
  modelPath: string;
  tokenizerPath: string;
  /** Output labels in logit order, e.g. ["SAFE", "INJECTION"]. */
  labels: readonly string[];
  /** The label whose probability is the plug-in's score. Default: the last label. */
  positiveLabel?: string;
  /** Tokens per input, [CLS] and [SEP] included. Default 512. */
  maxLength?: number;
  /** How to load the runtime. Default: `import("onnxruntime-node")`. Tests inject a fake. */
  importRuntime?: () => Promise<unknown>;
  log?: { warn(message: string): void; info?(message: string): void };
}

export interface OnnxClassification {
  /** Probability of the positive label. */
  score: number;
  /** Probability per label (softmax over the logits). */
  categories: Record<string, number>;
}

export interface OnnxClassifier {
  classify(text: string): Promise<OnnxClassification>;
}

export type OnnxPlugin = { available: true; classifier: OnnxClassifier } | { available: false; reason: string };

const RUNTIME_PACKAGE = "onnxruntime-node";

function defaultImport(): Promise<unknown> {
  // A variable specifier keeps TypeScript and bundlers from resolving a package that is optional.
  const name: string = RUNTIME_PACKAGE;
  return import(name);
}

function asRuntime(mod: unknown): OrtRuntime | undefined {
  const candidate = (typeof mod === "object" && mod !== null && "default" in mod && !("InferenceSession" in mod)
    ? (mod as { default: unknown }).default
    : mod) as Partial<OrtRuntime> | null;
  if (!candidate || typeof candidate !== "object") return undefined;
  if (typeof candidate.InferenceSession?.create !== "function" || typeof candidate.Tensor !== "function") return undefined;
  return candidate as OrtRuntime;
}

export function softmax(logits: readonly number[]): number[] {
  const max = Math.max(...logits);
  const exps = logits.map((x) => Math.exp(x - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / sum);
}

/** Loads the plug-in, or explains why it is unavailable. Never throws. */
export async function loadOnnxClassifier(options: OnnxClassifierOptions): Promise<OnnxPlugin> {
  const unavailable = (reason: string): OnnxPlugin => {
    options.log?.warn(`ONNX guardrail plug-in unavailable: ${reason}`);
    return { available: false, reason };
  };
  let runtime: OrtRuntime | undefined;
  try {
    runtime = asRuntime(await (options.importRuntime ?? defaultImport)());
  } catch (error) {
    return unavailable(
      `package ${RUNTIME_PACKAGE} is not installed or failed to load (${(error as Error).message}); install it next to Warden to use an ONNX model`,
    );
  }
  if (!runtime) return unavailable(`package ${RUNTIME_PACKAGE} does not look like onnxruntime (no InferenceSession/Tensor)`);
  for (const [what, path] of [
    ["model", options.modelPath],
    ["tokenizer", options.tokenizerPath],
  ] as const) {
    try {
      await access(path);
    } catch {
      return unavailable(`${what} file ${path} is missing or unreadable`);
    }
  }
  let tokenizer: WordPieceTokenizer;
  try {
    tokenizer = await loadWordPieceTokenizer(options.tokenizerPath);
  } catch (error) {
    return unavailable(`tokenizer ${options.tokenizerPath}: ${(error as Error).message}`);
  }
  let session: OrtSession;
  try {
    session = await runtime.InferenceSession.create(options.modelPath);
  } catch (error) {
    return unavailable(`model ${options.modelPath} failed to load: ${(error as Error).message}`);
  }
  if (options.labels.length < 2) return unavailable("at least two labels are needed");
  const positive = options.positiveLabel ?? options.labels[options.labels.length - 1] ?? "";
  const positiveIndex = options.labels.indexOf(positive);
  if (positiveIndex < 0) return unavailable(`positive label ${positive} is not among the labels`);
  const Tensor = runtime.Tensor;
  const maxLength = options.maxLength ?? 512;

  const classifier: OnnxClassifier = {
    async classify(text) {
      const encoding = tokenizer.encode(text, maxLength);
      const dims = [1, encoding.inputIds.length];
      const tensor = (values: number[]): OrtTensor => new Tensor("int64", BigInt64Array.from(values, (v) => BigInt(v)), dims);
      const all: Record<string, OrtTensor> = {
        input_ids: tensor(encoding.inputIds),
        attention_mask: tensor(encoding.attentionMask),
        token_type_ids: tensor(encoding.tokenTypeIds),
      };
      const feeds: Record<string, OrtTensor> = {};
      for (const name of session.inputNames) {
        const input = all[name];
        if (!input) throw new Error(`ONNX model wants an input named ${name}`);
        feeds[name] = input;
      }
      const outputs = await session.run(feeds);
      const output = outputs[session.outputNames[0] ?? "logits"];
      if (!output) throw new Error("ONNX model returned no output");
      const logits = Array.from(output.data, Number);
      if (logits.length !== options.labels.length) {
        throw new Error(`ONNX model returned ${logits.length} logits for ${options.labels.length} labels`);
      }
      const probabilities = softmax(logits);
      const categories: Record<string, number> = {};
      options.labels.forEach((label, i) => {
        categories[label] = probabilities[i] ?? 0;
      });
      return { score: probabilities[positiveIndex] ?? 0, categories };
    },
  };
  options.log?.info?.(`ONNX guardrail plug-in loaded ${options.modelPath}`);
  return { available: true, classifier };
}
