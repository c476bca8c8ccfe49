"""`/search QUERY`: what the assistant can find, within what this chat may see."""

from __future__ import annotations

from bot.assistant.commands import CommandContext, CommandRegistry, UsageError

MAX_HITS = 5


def register_memory_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "search",
        usage="/search WORDS",
        summary="search past messages this chat may see",
        admin=True,
    )
    async def search_cmd(ctx: CommandContext, args: list[str]) -> str:
        if not args:
            raise UsageError()
        query = " ".join(args)
        filters = ctx.visibility.search_filters()
        hits = await ctx.services.search.search(query, filters, MAX_HITS)
        if not hits:
            return f"Nothing found for {query!r}."
        tz = ctx.services.settings.tz
        lines = [f"Top {len(hits)} for {query!r}:"]
        for hit in hits:
            when = hit.time.astimezone(tz).strftime("%m-%d %H:%M") if hit.time else ""
            excerpt = (hit.excerpts[0] if hit.excerpts else "").replace("\n", " ")
            lines.append(f"- {when} {hit.title}: {excerpt}")
        return "\n".join(lines)
