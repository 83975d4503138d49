"""The op database's entries, one module per op family (see tests/opdb.py)."""
