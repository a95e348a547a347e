"""askvault: a local question-answering companion for Obsidian vaults."""

__version__ = "0.1.0"
