"""Forensics: what the WAL tells after the fact (diverging timelines, applying what was lost)."""
