/**
 * The "compatible" kind: an OpenAI-compatible server that speaks chat completions only, as vLLM does
 * (the chat shapes are in chat.ts, flavour `compatible`). What differs from OpenAI here:
 * - errors: `{"error": {"message", "type": "BadRequestError", "param", "code": 400}}`, the type named
 *   after the HTTP status and the code the status as a number (a string only when the errorCode
 *   directive gives one);
 * - a wrong or missing key: 401 with vLLM's bare `{"error": "Unauthorized"}`;
 * - GET /v1/models: vLLM's model cards (owned_by "vllm", root, parent, max_model_len, permission);
 * - POST /v1/embeddings: OpenAI's answer plus vLLM's id and created, and usage with completion_tokens 0.
 */
import { STATUS_CODES } from "node:http";
import type OpenAI from "openai";
import { digest, FAKE_EPOCH_SECONDS } from "./common.ts";
import type { WireEmbeddingResponse } from "./openai.ts";

export interface CompatibleErrorBody {
  error: { message: string; type: string; param: string | null; code: number | string };
}

/** vLLM's error type for a status: its reason phrase in PascalCase, ending in "Error" (400 BadRequestError, 500 InternalServerError). */
export function compatibleErrorType(status: number): string {
  const phrase = (STATUS_CODES[status] ?? "Unknown").replace(/[^A-Za-z ]/g, "").replace(/ Error$/, "");
  return `${phrase.split(" ").map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join("")}Error`;
}

export function compatibleError(status: number, message: string, type?: string, code?: string, param?: string): CompatibleErrorBody {
  return { error: { message, type: type ?? compatibleErrorType(status), param: param ?? null, code: code ?? status } };
}

/** vLLM's answer to a request without the right Bearer key. */
export const COMPATIBLE_UNAUTHORIZED = { error: "Unauthorized" } as const;

export const COMPATIBLE_MODEL_IDS = ["meta-llama/Llama-3.1-8B-Instruct", "BAAI/bge-small-en-v1.5"];

type ModelCard = OpenAI.Model & {
  root: string;
  parent: null;
  max_model_len: number;
  permission: Array<Record<string, unknown>>;
};

/** GET /v1/models, as vLLM lists what it serves. */
export function compatibleModels(): { object: "list"; data: ModelCard[] } {
  return {
    object: "list",
    data: COMPATIBLE_MODEL_IDS.map((id) => ({
      id,
      object: "model",
      created: FAKE_EPOCH_SECONDS,
      owned_by: "vllm",
      root: id,
      parent: null,
      max_model_len: 32_768,
      permission: [
        {
          id: `modelperm-${digest("model-permission", id).slice(0, 32)}`,
          object: "model_permission",
          created: FAKE_EPOCH_SECONDS,
          allow_create_engine: false,
          allow_sampling: true,
          allow_logprobs: true,
          allow_search_indices: false,
          allow_view: true,
          allow_fine_tuning: false,
          organization: "*",
          group: null,
          is_blocking: false,
        },
      ],
    })),
  };
}

export type CompatibleEmbeddingResponse = Omit<WireEmbeddingResponse, "usage"> & {
  id: string;
  created: number;
  usage: { prompt_tokens: number; total_tokens: number; completion_tokens: number; prompt_tokens_details: null };
};

/** vLLM's embeddings answer: OpenAI's, with an id, a created time and vLLM's usage. */
export function compatibleEmbeddings(answer: WireEmbeddingResponse, hash: string): CompatibleEmbeddingResponse {
  return {
    id: `embd-${digest("embedding-id", hash).slice(0, 32)}`,
    object: answer.object,
    created: FAKE_EPOCH_SECONDS,
    model: answer.model,
    data: answer.data,
    usage: { prompt_tokens: answer.usage.prompt_tokens, total_tokens: answer.usage.total_tokens, completion_tokens: 0, prompt_tokens_details: null },
  };
}
