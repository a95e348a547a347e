"""Orchestration, in rooms (docs/architecture.md, "Rooms of services/"): index, retrieval,
answer, inbox, documents, admin, agent; a room imports only the rooms before it."""
