import type { GatewayKey, WorkspaceConfig } from "../config/types.ts";
import { isGlob, matchesAny } from "../routing/glob.ts";

export type AccessDecision =
  | { allowed: true }
  | { allowed: false; reason: "blocked" }
  | { allowed: false; reason: "not-allowed"; available: string[] };

/**
 * Model access for a key. Block rules refuse a model to the whole workspace. Allow lists may sit
 * on the key, on its owner, and on its groups; where a level has a list, the model must be on it
 * (the lists of several groups add up). Every level that has a list must allow the model.
 */
export function checkModelAccess(config: WorkspaceConfig | undefined, key: GatewayKey, model: string): AccessDecision {
  if (config && matchesAny(config.blockedModels, model)) return { allowed: false, reason: "blocked" };
  if (isAllowed(config, key, model)) return { allowed: true };
  const available = availableModels(config, key);
  // Allow lists of globs only: name the patterns, so the message still says what is available.
  return { allowed: false, reason: "not-allowed", available: available.length > 0 ? available : allowPatterns(config, key) };
}

function allowPatterns(config: WorkspaceConfig | undefined, key: GatewayKey): string[] {
  const patterns = [
    ...(key.allowedModels ?? []),
    ...(key.userId ? config?.userAllowLists.get(key.userId) ?? [] : []),
    ...key.groupIds.flatMap((id) => config?.groupAllowLists.get(id) ?? []),
  ];
  return [...new Set(patterns)].filter((pattern) => !matchesAny(config?.blockedModels ?? [], pattern));
}

/**
 * The models this key may use, by name: the exact names that routing rules and allow lists
 * mention, less what is blocked or not allowed. Globs cannot be listed, so they are left out.
 */
export function availableModels(config: WorkspaceConfig | undefined, key: GatewayKey): string[] {
  if (!config) return [];
  const names = new Set<string>();
  const add = (patterns: readonly string[] | null | undefined) => {
    for (const pattern of patterns ?? []) if (!isGlob(pattern)) names.add(pattern);
  };
  for (const rule of config.routingRules) add(rule.models);
  add(key.allowedModels);
  if (key.userId) add(config.userAllowLists.get(key.userId));
  for (const groupId of key.groupIds) add(config.groupAllowLists.get(groupId));
  return [...names]
    .filter((model) => !matchesAny(config.blockedModels, model) && isAllowed(config, key, model))
    .sort();
}

function isAllowed(config: WorkspaceConfig | undefined, key: GatewayKey, model: string): boolean {
  if (key.allowedModels && !matchesAny(key.allowedModels, model)) return false;
  if (!config) return true;
  const userList = key.userId ? config.userAllowLists.get(key.userId) : undefined;
  if (userList && !matchesAny(userList, model)) return false;
  const groupLists = key.groupIds.flatMap((id) => config.groupAllowLists.get(id) ?? []);
  const anyGroupList = key.groupIds.some((id) => config.groupAllowLists.has(id));
  if (anyGroupList && !matchesAny(groupLists, model)) return false;
  return true;
}
