"""The `pgmem` command (installed as pgmem.cli)."""
