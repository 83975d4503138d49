"""Backends: one package per array library, with the same module name per op family."""
