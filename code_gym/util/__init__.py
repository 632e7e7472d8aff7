"""Helpers every subsystem shares: host file-system access (`hostfs`: walks, stat keys, mounts,
code-gym's temp-folder names), plain-text tables (`table`) and one POST to an OpenAI-compatible
chat endpoint (`chat`)."""
