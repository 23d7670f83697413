"""The sans-IO protocol core: wire types, JSON-RPC codec, ``_meta`` and version rules,
errors, header mirroring, and pure decision functions. No sockets, no event loop."""
