"""Transports: thin adapters between bytes on a wire and the protocol core."""
