import { invalidArgument } from "./errors.ts";

export const maxPerPage = 100;

export interface PageRequest {
  page?: number;
  perPage?: number;
}

export interface Page {
  page: number;
  limit: number;
  offset: number;
}

/** page is 1-based (default 1); perPage is 1..100 (default 100). */
export function pageOf(req: PageRequest): Page {
  const page = req.page ?? 1;
  const perPage = req.perPage ?? maxPerPage;
  if (!Number.isInteger(page) || page < 1) throw invalidArgument("page must be an integer of at least 1");
  if (!Number.isInteger(perPage) || perPage < 1 || perPage > maxPerPage) {
    throw invalidArgument(`perPage must be an integer from 1 to ${maxPerPage}`);
  }
  return { page, limit: perPage, offset: (page - 1) * perPage };
}

/**
 * Cuts the rows of a query that asked for `limit + 1` down to one page, and says which page
 * comes next, if any.
 */
export function paged<T>(rows: T[], page: Page): { items: T[]; nextPage: number | undefined } {
  const more = rows.length > page.limit;
  return { items: more ? rows.slice(0, page.limit) : rows, nextPage: more ? page.page + 1 : undefined };
}
