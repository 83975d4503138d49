"""Backend-independent op definitions, one module per MPSGraph op family."""
