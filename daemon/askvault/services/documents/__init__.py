"""The JSON documents askvault prints (`--json`) and hands agents (MCP), one typed model
each, built from a service's result (core/schema.py derives their JSON Schemas)."""
