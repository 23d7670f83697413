"""Multi-round-trip requests (MRTR): which methods may answer ``input_required``, and the
methods an input request may carry."""

from __future__ import annotations

#: The only methods whose handlers may answer ``input_required`` (and be retried with answers).
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})

#: The methods an ``inputRequests`` entry may name (server-to-client questions).
INPUT_REQUEST_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
