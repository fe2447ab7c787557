"""Floor 0: what every room shares and that imports nothing of Stamen's above it (no torch, no flwr)."""
