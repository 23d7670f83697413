"""Server side: declare tools, resources and prompts; answer every request statelessly."""

from ._context import Context
from ._primitives import ToolError, assistant, audio, embedded, image, resource_contents, text, user
from ._server import Reply, Server
from ._signature import Header

__all__ = [
    "Context", "Header", "Reply", "Server", "ToolError",
    "assistant", "audio", "embedded", "image", "resource_contents", "text", "user",
]
