"""Helpers every subsystem shares: host file-system access (`hostfs`: walks, stat keys, mounts,
code-gym's temp-folder names), line alignment in bounded host time (`linediff`), plain-text tables
(`table`) and one POST to an OpenAI-compatible chat endpoint (`chat`)."""
