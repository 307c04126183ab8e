import { invalidArgument } from "./errors.ts";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const emailPattern = /^[^\s@"<>()[\],;:]+@[^\s@"<>()[\],;:]+\.[^\s@"<>()[\],;:]+$/;

/** A UUID from a caller, lower-cased; otherwise a 400 that names the field. */
export function requireUuid(field: string, value: string): string {
  if (!uuidPattern.test(value)) throw invalidArgument(`${field} must be a UUID`);
  return value.toLowerCase();
}


export function requireText(field: string, value: string | undefined, maxLength: number): string {
  const text = value?.trim() ?? "";
  if (text === "") throw invalidArgument(`${field} is required`);
  return checkLength(field, text, maxLength);
}

export function checkLength(field: string, value: string, maxLength: number): string {
  if (value.length > maxLength) throw invalidArgument(`${field} must be at most ${maxLength} characters`);
  return value;
}

export function optionalText(field: string, value: string | undefined, maxLength: number): string | undefined {
  return value === undefined ? undefined : checkLength(field, value, maxLength);
}

export function requireEmail(field: string, value: string): string {
  const email = value.trim();
  if (email.length > 120 || !emailPattern.test(email)) throw invalidArgument(`${field} must be an e-mail address`);
  return email;
}
