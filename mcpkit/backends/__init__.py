"""Shared backends for running one server on several workers and machines.

Nothing here is imported by ``import mcpkit``; ``mcpkit.backends.redis`` loads the ``redis``
client (``pip install 'mcpkit[redis]'``) only when it is imported.
"""
