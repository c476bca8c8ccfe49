"""A fake Meilisearch server for tests: a real HTTP server on 127.0.0.1, on a random port, in
its own thread, so the official (blocking) client can talk to it from any test.

Written from the Meilisearch documentation (API reference / OpenAPI 1.x, "Known
limitations", the filter expression reference) and milli's filter parser, not from our
adapter. It covers what a search adapter needs: health/version, indexes, settings (PATCH
merges, null resets), documents (add-or-replace, delete by ids / filter / all, fetch), tasks,
search with filters, ranking scores, crop/highlight, distinct, offset/limit, auth.

Faithful on purpose:
  * writes return 202 + a summarized task; the change happens when the task is processed,
    which is immediately unless `pause_tasks()` was called;
  * document ids must match `[A-Za-z0-9_-]{1,511}` (or be non-negative integers), otherwise
    the task fails with `invalid_document_id` and nothing of the batch is applied;
  * filters: `=`, `!=`, `IN`, `NOT IN`, `EXISTS`, `AND`, `OR`, `NOT`, parentheses, comparisons;
    quoted values unescaped like milli (`\\"` first, then Rust-style escapes); string equality
    is case-insensitive after NFKD and trimming (milli's `normalize_facet`); a filter on a
    non-filterable attribute, an operator its granular features forbid, or bad syntax gives
    400 `invalid_search_filter`;
  * only the first 10 query words count; the last word is a prefix unless followed by a space;
    `matchingStrategy` last / all / frequency;
  * with a master key, every route but /health wants `Authorization: Bearer <key>`
    (401 `missing_authorization_header` / 403 `invalid_api_key`).

Approximations: Latin words are runs of letters and digits (every punctuation character
separates, as in charabia); a run of CJK characters in the query is one word matched as a
substring; no typo tolerance, no phrase search, no negation; ranking is words matched, then
attribute order, then insertion order; `_rankingScore` is the matched-word fraction, slightly
reduced for prefix and lower-priority-attribute matches.

Layout: `server` (FakeMeilisearch: thread, HTTP plumbing, auth, route table) on top of
`store` (state, task queue, test controls) and the `routes_*` mixins; `settings`, `state`,
`documents`, `filterable`, `filter_parser`, `filter_eval`, `search` and `text` hold the
engine the routes call.
"""

from .errors import ApiError
from .filter_eval import matches
from .filter_parser import FilterError, filter_attributes, parse_filter
from .server import FakeMeilisearch
from .text import QUERY_WORD_LIMIT

__all__ = [
    "QUERY_WORD_LIMIT",
    "ApiError",
    "FakeMeilisearch",
    "FilterError",
    "filter_attributes",
    "matches",
    "parse_filter",
]
