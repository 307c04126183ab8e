/**
 * Checksum and range validators that confirm PII candidates found by patterns. Every function is
 * pure and takes the candidate as written (separators included where noted).
 */

/** Digits only: spaces and dashes removed. */
export function digitsOf(value: string): string {
  return value.replace(/[ -]/g, "");
}

/** The Luhn (mod 10) check over a string of digits. */
export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/**
 * Whether a 13–19 digit number has an issuer prefix (IIN) and a length that a payment card network
 * uses: Visa, Mastercard (51–55 and 2221–2720), Amex, Discover, JCB, Diners, UnionPay, Maestro.
 */
export function cardIssuerPlausible(digits: string): boolean {
  const n = digits.length;
  if (n < 13 || n > 19) return false;
  const p2 = Number(digits.slice(0, 2));
  const p3 = Number(digits.slice(0, 3));
  const p4 = Number(digits.slice(0, 4));
  const p6 = Number(digits.slice(0, 6));
  if (digits[0] === "4") return n === 13 || n === 16 || n === 19;
  if (p2 >= 51 && p2 <= 55) return n === 16;
  if (p4 >= 2221 && p4 <= 2720) return n === 16;
  if (p2 === 34 || p2 === 37) return n === 15;
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649) || (p6 >= 622126 && p6 <= 622925)) return n >= 16;
  if (p4 >= 3528 && p4 <= 3589) return n >= 16;
  if ((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39) return n >= 14;
  if (p2 === 62) return n >= 16;
  if (p2 === 50 || (p2 >= 56 && p2 <= 58) || p2 === 67 || p2 === 63) return n >= 13;
  return false;
}

/** A Luhn-valid number with a card network's prefix and length. */
export function creditCardValid(value: string): boolean {
  const digits = digitsOf(value);
  return cardIssuerPlausible(digits) && luhnValid(digits);
}

/**
 * US Social Security number ranges: area not 000, 666 or 900–999; group not 00; serial not 0000.
 * Also refuses numbers that were never valid in practice (all one digit, 123-45-6789, the
 * Woolworth wallet number 078-05-1120 and 219-09-9999 from an advertisement).
 */
export function ssnValid(value: string): boolean {
  const digits = value.replace(/[ -]/g, "");
  if (!/^\d{9}$/.test(digits)) return false;
  const area = Number(digits.slice(0, 3));
  const group = Number(digits.slice(3, 5));
  const serial = Number(digits.slice(5));
  if (area === 0 || area === 666 || area >= 900) return false;
  if (group === 0 || serial === 0) return false;
  if (/^(\d)\1{8}$/.test(digits)) return false;
  if (digits === "123456789" || digits === "078051120" || digits === "219099999") return false;
  return true;
}

/** IBAN length by country (ISO 13616 registry, SWIFT release of 2024). */
export const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28,
  CH: 21, CR: 22, CY: 28, CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18,
  FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22,
  IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20,
  LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18,
  NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31,
  SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29,
  VA: 22, VG: 24, XK: 20, YE: 30,
};

/** ISO 13616 / ISO 7064 mod 97-10 over a compact IBAN (no spaces). */
export function ibanChecksumValid(compact: string): boolean {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(compact)) return false;
  const rearranged = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? code - 55 : code - 48;
    remainder = value >= 10 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97;
  }
  return remainder === 1;
}

/** A compact or grouped IBAN with the right length for its country and valid check digits. */
export function ibanValid(value: string): boolean {
  const compact = value.replace(/ /g, "").toUpperCase();
  const expected = IBAN_LENGTHS[compact.slice(0, 2)];
  return expected !== undefined && compact.length === expected && ibanChecksumValid(compact);
}

/**
 * The local part and domain of an e-mail address: dot-atom local part (no leading, trailing or
 * doubled dots), DNS labels of 1–63 characters and an alphabetic top-level domain.
 */
export function emailValid(value: string): boolean {
  const at = value.lastIndexOf("@");
  if (at <= 0 || at > 64) return false;
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (local.startsWith(".") || local.endsWith(".") || local.includes("..")) return false;
  if (domain.length > 253) return false;
  const labels = domain.split(".");
  if (labels.length < 2) return false;
  for (const label of labels) {
    if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label)) return false;
  }
  return /^[A-Za-z]{2,24}$/.test(labels[labels.length - 1] ?? "");
}
