/**
 * Context words around a PII candidate. Words before (and a little after) a candidate raise its
 * score, or, for the negative lists, show that a number is an order, tracking or version number.
 * English, German, French and Spanish. All patterns run on a lower-cased window of the text.
 */

export interface ContextWords {
  /** Words that make the entity likely. */
  readonly positive: RegExp;
  /** Words that make the number something else (an order, a tracking number, a version). */
  readonly negative?: RegExp;
}

const ID_WORDS =
  "order|orders|invoice|inv|tracking|track|shipment|parcel|package|reference|ref|isbn|issn|serial|sku|part|" +
  "ticket|case|customer id|account id|user id|request id|id|imei|meter|model|catalog|catalogue|sample|barcode|" +
  "ean|upc|confirmation|booking ref|bestellnummer|bestellung|rechnung|rechnungsnummer|sendungsnummer|" +
  "kundennummer|auftrag|pedido|factura|referencia|seguimiento|commande|facture|référence|suivi|colis";

export const CARD_CONTEXT: ContextWords = {
  positive:
    /\b(?:card|cards|credit|debit|visa|master ?card|amex|american express|discover|diners|jcb|maestro|unionpay|cc|payment|pay|paid|charge|charged|billing|checkout|karte|kreditkarte|zahlung|tarjeta|crédito|débito|carte|bancaire|paiement|cartão|carta)\b/,
  negative: new RegExp(`\\b(?:${ID_WORDS}|gift card|voucher|coupon)\\b`),
};

export const SSN_CONTEXT: ContextWords = {
  positive:
    /\b(?:ssn|ssns|ss#|social|social security|soc\.? sec|taxpayer|tin|itin|sozialversicherung|seguro social|sécurité sociale)\b/,
  negative: new RegExp(`\\b(?:${ID_WORDS}|phone|tel|fax|call|placeholder|example)\\b`),
};

export const PASSPORT_CONTEXT: ContextWords = {
  positive: /\b(?:passport|passports|passeport|pasaporte|passaporto|reisepass|passnummer|pass-nr)\b/,
};

export const PHONE_CONTEXT: ContextWords = {
  positive:
    /\b(?:phone|telephone|tel|mobile|cell|call|calls|text|sms|whatsapp|signal|fax|dial|contact|reach|number|hotline|office|telefon|telefonnummer|handy|rufnummer|ruf|anrufen|téléphone|portable|appel|appelle|appelez|numéro|teléfono|móvil|celular|llama|llámame|número)\b/,
  negative: new RegExp(`\\b(?:${ID_WORDS}|ssn|social security|date|dated)\\b`),
};

export const IP_CONTEXT: ContextWords = {
  positive:
    /\b(?:ip|ips|ipv4|ipv6|address|addresses|addr|host|hostname|server|client|src|dst|source|destination|connected|connect|connection|ping|subnet|gateway|router|dns|firewall|allow-list|allowlist|whitelist|blocklist|block|proxy|vpn|lan|wan|route|nat|network|login|logged|ip-adresse|adresse|dirección|conexión)\b/,
  negative:
    /\b(?:v|ver|version|versions|versión|versionsnummer|build|release|firmware|fw|rev|revision|patch|update|upgrade|sdk|assembly|dll|package|npm|pip|chrome|firefox|safari|edge|android|ios|macos|windows|kernel|python|node|java|release notes|changelog)\b/,
};

export const CRYPTO_CONTEXT: ContextWords = {
  positive:
    /\b(?:bitcoin|btc|wallet|address|crypto|cryptocurrency|eth|ether|ethereum|erc-?20|usdt|send|sent|payout|donate|donations|deposit|withdraw|adresse|dirección|cartera|monedero|portefeuille)\b/,
};

/** The lower-cased text from `from` to `to`, clamped to the string. */
export function windowOf(text: string, from: number, to: number): string {
  return text.slice(Math.max(0, from), Math.min(text.length, to)).toLowerCase();
}

/** The lower-cased text before `start`, back to at most `chars` characters. */
export function before(text: string, start: number, chars: number): string {
  return windowOf(text, start - chars, start);
}

/** The lower-cased text after `end`, up to at most `chars` characters. */
export function after(text: string, end: number, chars: number): string {
  return windowOf(text, end, end + chars);
}

/**
 * The text of the clause before `start`: back to the previous sentence end (`. `, `! `, `? `,
 * a line break or `;`), at most `chars` characters.
 */
export function clauseBefore(text: string, start: number, chars: number): string {
  const window = before(text, start, chars);
  const cut = Math.max(
    window.lastIndexOf(". "),
    window.lastIndexOf("! "),
    window.lastIndexOf("? "),
    window.lastIndexOf("\n"),
    window.lastIndexOf(";"),
  );
  return cut >= 0 ? window.slice(cut + 1) : window;
}
