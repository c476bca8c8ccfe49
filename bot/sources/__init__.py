"""The bot's side of the sources (`sources/`): the sync worker and its schedule, search
indexing of source records, `/sync` in chat and `maka sync` on the command line."""
