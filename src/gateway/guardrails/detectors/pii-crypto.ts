import { createHash } from "node:crypto";
import { keccak_256 } from "@noble/hashes/sha3.js";

/**
 * Checksums of cryptocurrency wallet addresses: Bitcoin Base58Check (P2PKH `1…`, P2SH `3…`),
 * Bitcoin segwit bech32 / bech32m (`bc1…`, BIP 173 and BIP 350) and Ethereum EIP-55 mixed-case
 * addresses (keccak-256 from @noble/hashes).
 */

const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const BASE58_INDEX = new Map([...BASE58_ALPHABET].map((ch, i) => [ch, i]));

/** Decodes Base58 to bytes, or returns undefined for a character outside the alphabet. */
export function base58Decode(text: string): Uint8Array | undefined {
  const bytes: number[] = [];
  for (const ch of text) {
    const value = BASE58_INDEX.get(ch);
    if (value === undefined) return undefined;
    let carry = value;
    for (let i = 0; i < bytes.length; i++) {
      carry += (bytes[i] ?? 0) * 58;
      bytes[i] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  for (const ch of text) {
    if (ch !== "1") break;
    bytes.push(0);
  }
  return Uint8Array.from(bytes.reverse());
}

function sha256(data: Uint8Array): Buffer {
  return createHash("sha256").update(data).digest();
}

/**
 * A Bitcoin mainnet P2PKH (version 0x00) or P2SH (version 0x05) address: 25 bytes after
 * Base58 decoding, whose last four are the first four of SHA-256(SHA-256(first 21)).
 */
export function bitcoinBase58Valid(address: string): boolean {
  if (!/^[13]/.test(address) || address.length < 26 || address.length > 35) return false;
  const bytes = base58Decode(address);
  if (!bytes || bytes.length !== 25) return false;
  if (bytes[0] !== 0x00 && bytes[0] !== 0x05) return false;
  const payload = bytes.subarray(0, 21);
  const check = sha256(sha256(payload));
  for (let i = 0; i < 4; i++) if (check[i] !== bytes[21 + i]) return false;
  return true;
}

const BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const BECH32_CONST = 1;
const BECH32M_CONST = 0x2bc830a3;

function bech32Polymod(values: readonly number[]): number {
  const gen = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= gen[i] ?? 0;
  }
  return chk >>> 0;
}

function hrpExpand(hrp: string): number[] {
  const out: number[] = [];
  for (const ch of hrp) out.push(ch.charCodeAt(0) >> 5);
  out.push(0);
  for (const ch of hrp) out.push(ch.charCodeAt(0) & 31);
  return out;
}

function convertBits(data: readonly number[], from: number, to: number): number[] | undefined {
  let acc = 0;
  let bits = 0;
  const out: number[] = [];
  const maxv = (1 << to) - 1;
  for (const value of data) {
    acc = (acc << from) | value;
    bits += from;
    while (bits >= to) {
      bits -= to;
      out.push((acc >> bits) & maxv);
    }
  }
  if (bits >= from || ((acc << (to - bits)) & maxv) !== 0) return undefined;
  return out;
}

/**
 * A Bitcoin mainnet segwit address (`bc1…`): bech32 checksum for witness version 0 with a 20- or
 * 32-byte program, bech32m for versions 1–16 with a 2–40 byte program. Mixed case is refused.
 */
export function bitcoinBech32Valid(address: string): boolean {
  if (address !== address.toLowerCase() && address !== address.toUpperCase()) return false;
  const text = address.toLowerCase();
  if (text.length < 14 || text.length > 90) return false;
  const sep = text.lastIndexOf("1");
  const hrp = text.slice(0, sep);
  if (hrp !== "bc") return false;
  const data: number[] = [];
  for (const ch of text.slice(sep + 1)) {
    const v = BECH32_CHARSET.indexOf(ch);
    if (v < 0) return false;
    data.push(v);
  }
  if (data.length < 7) return false;
  const version = data[0] ?? -1;
  if (version > 16) return false;
  const constant = bech32Polymod([...hrpExpand(hrp), ...data]);
  if (constant !== (version === 0 ? BECH32_CONST : BECH32M_CONST)) return false;
  const program = convertBits(data.slice(1, -6), 5, 8);
  if (!program || program.length < 2 || program.length > 40) return false;
  if (version === 0 && program.length !== 20 && program.length !== 32) return false;
  return true;
}

/** Whether `0x` + 40 hex digits in mixed case carries a valid EIP-55 checksum. */
export function ethereumChecksumValid(address: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return false;
  const hex = address.slice(2);
  const hash = keccak_256(new TextEncoder().encode(hex.toLowerCase()));
  for (let i = 0; i < 40; i++) {
    const ch = hex[i] ?? "";
    if (!/[a-fA-F]/.test(ch)) continue;
    const byte = hash[i >> 1] ?? 0;
    const nibble = i % 2 === 0 ? byte >> 4 : byte & 0x0f;
    const wantUpper = nibble >= 8;
    if (wantUpper !== (ch === ch.toUpperCase())) return false;
  }
  return true;
}

/** Whether a hex Ethereum address is written in one case (no EIP-55 checksum to check). */
export function ethereumSingleCase(address: string): boolean {
  const hex = address.slice(2);
  return hex === hex.toLowerCase() || hex === hex.toUpperCase();
}
