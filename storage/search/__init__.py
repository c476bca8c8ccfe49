"""Full-text search over the assistant's messages and notes.

`base.SearchIndex` is the interface; `embedded.EmbeddedSearchIndex` (tantivy, local directory)
and `meili.MeiliSearchIndex` (Meilisearch server) implement it. Both tokenize with
`tokenizer.tokenize`, so Chinese, identifiers and paths match the same way everywhere.
The backends are not imported here: each pulls in its own engine.
"""

from storage.search.base import SearchDocument, SearchFilters, SearchHit, SearchIndex
from storage.search.errors import SearchError

__all__ = ["SearchDocument", "SearchError", "SearchFilters", "SearchHit", "SearchIndex"]
