"""Keeping the synced originals up to date: the sync worker and its schedule (`component`), the
configured adapters of `sources/` (`adapters`), `/sync` in chat (`commands`), `maka sync` on
the command line (`cli`), and what both show (`status`). Indexing the records for search is
memory's (`bot/memory/source_index.py`)."""
