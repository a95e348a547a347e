"""What an agent is served (`askvault mcp`, the search socket): one vault kept open for
many calls (warm_session) and a note shown to an agent, confined to the vault (note_view)."""
