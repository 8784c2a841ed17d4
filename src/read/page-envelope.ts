/** meta and links of a page (backoffice-api.md 4.10). */
export interface PageMeta {
  totalItems: number;
  itemCount: number;
  itemsPerPage: number;
  totalPages: number;
  currentPage: number;
}

export interface PageLinks {
  self: string;
  first: string;
  last: string;
  prev: string | null;
  next: string | null;
}

/**
 * Links keep every filter and the sort of the request (extensions.md 6), in a stable order, with
 * page and limit last. An empty result has totalPages 0 and its last link points at page 1. baseUrl is
 * the endpoint's address, or only its path (relative links: src/routes/v1/list-route-links.ts).
 */
export function pageEnvelope(
  baseUrl: string,
  filters: Readonly<Record<string, string | number | undefined>>,
  page: number,
  limit: number,
  totalItems: number,
  itemCount: number,
): { meta: PageMeta; links: PageLinks } {
  const totalPages = Math.ceil(totalItems / limit);
  const link = (to: number) => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(filters))
      if (value !== undefined) params.set(name, String(value));
    params.set('page', String(to));
    params.set('limit', String(limit));
    return `${baseUrl}?${params}`;
  };
  return {
    meta: { totalItems, itemCount, itemsPerPage: limit, totalPages, currentPage: page },
    links: {
      self: link(page),
      first: link(1),
      last: link(Math.max(totalPages, 1)),
      prev: page > 1 ? link(page - 1) : null,
      next: page < totalPages ? link(page + 1) : null,
    },
  };
}
