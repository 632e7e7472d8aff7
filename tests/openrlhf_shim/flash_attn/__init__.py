"""Test stand-in for flash-attn's pure-PyTorch helpers (tests/openrlhf_shim/README.md)."""
