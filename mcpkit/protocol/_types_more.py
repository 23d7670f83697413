"""The wire types few requests need, part of :mod:`mcpkit.protocol.types` (import them from
there): sampling content, the answers to a server's questions (sampling, elicitation, roots),
notification params and the JSON-RPC envelopes. They are defined when first named, so a
server's cold start does not build them.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Union

from msgspec import UNSET, UnsetType, field

from .types import (
    JSON,
    AudioContent,
    ContentBlock,
    ImageContent,
    LoggingLevel,
    ProgressToken,
    RequestId,
    Role,
    Struct,
    SubscriptionFilter,
    TextContent,
    Tool,
)


# ---------------------------------------------------------------- sampling content
class ToolUseContent(Struct, tag_field="type", tag="tool_use", kw_only=True):
    type: ClassVar[Literal["tool_use"]] = "tool_use"
    id: str
    name: str
    input: dict[str, JSON]
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class ToolResultContent(Struct, tag_field="type", tag="tool_result", kw_only=True):
    type: ClassVar[Literal["tool_result"]] = "tool_result"
    toolUseId: str
    content: list[ContentBlock]
    #: A JSON object; None when absent.
    structuredContent: dict[str, JSON] | None = None
    #: False when absent (and left out on the wire when False).
    isError: bool = False
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


SamplingContentBlock = Union[TextContent, ImageContent, AudioContent, ToolUseContent, ToolResultContent]


# ---------------------------------------------------------------- client input (MRTR)
class SamplingMessage(Struct, kw_only=True):
    role: Role
    content: Union[SamplingContentBlock, list[SamplingContentBlock]]
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class ModelHint(Struct, kw_only=True):
    name: str | UnsetType = UNSET


class ModelPreferences(Struct, kw_only=True):
    hints: list[ModelHint] | UnsetType = UNSET
    costPriority: float | UnsetType = UNSET
    speedPriority: float | UnsetType = UNSET
    intelligencePriority: float | UnsetType = UNSET


class ToolChoice(Struct, kw_only=True):
    mode: Literal["auto", "required", "none"] | UnsetType = UNSET


class CreateMessageRequestParams(Struct, kw_only=True):
    messages: list[SamplingMessage]
    maxTokens: int
    modelPreferences: ModelPreferences | UnsetType = UNSET
    systemPrompt: str | UnsetType = UNSET
    includeContext: Literal["none", "thisServer", "allServers"] | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    stopSequences: list[str] | UnsetType = UNSET
    metadata: dict[str, JSON] | UnsetType = UNSET
    tools: list[Tool] | UnsetType = UNSET
    toolChoice: ToolChoice | UnsetType = UNSET


class CreateMessageResult(Struct, kw_only=True):
    role: Role
    content: Union[SamplingContentBlock, list[SamplingContentBlock]]
    model: str
    stopReason: str | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class ElicitRequestParams(Struct, kw_only=True):
    """Form (``requestedSchema``) or URL (``url``) elicitation; ``mode`` absent means form."""

    message: str
    mode: Literal["form", "url"] | UnsetType = UNSET
    requestedSchema: dict[str, JSON] | UnsetType = UNSET
    url: str | UnsetType = UNSET


class ElicitResult(Struct, kw_only=True):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, JSON] | UnsetType = UNSET


class Root(Struct, kw_only=True):
    uri: str
    name: str | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class ListRootsResult(Struct, kw_only=True):
    roots: list[Root]


# ---------------------------------------------------------------- notifications
class NotificationParams(Struct, kw_only=True):
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class CancelledParams(NotificationParams, kw_only=True):
    requestId: RequestId
    reason: str | UnsetType = UNSET


class ProgressParams(NotificationParams, kw_only=True):
    progressToken: ProgressToken
    progress: float
    total: float | UnsetType = UNSET
    message: str | UnsetType = UNSET


class LoggingMessageParams(NotificationParams, kw_only=True):
    level: LoggingLevel
    data: JSON
    logger: str | UnsetType = UNSET


class ResourceUpdatedParams(NotificationParams, kw_only=True):
    uri: str


class SubscriptionsAcknowledgedParams(NotificationParams, kw_only=True):
    notifications: SubscriptionFilter


NOTIFICATION_PARAMS: dict[str, type[NotificationParams]] = {
    "notifications/cancelled": CancelledParams,
    "notifications/progress": ProgressParams,
    "notifications/message": LoggingMessageParams,
    "notifications/resources/updated": ResourceUpdatedParams,
    "notifications/resources/list_changed": NotificationParams,
    "notifications/tools/list_changed": NotificationParams,
    "notifications/prompts/list_changed": NotificationParams,
    "notifications/subscriptions/acknowledged": SubscriptionsAcknowledgedParams,
}


# ---------------------------------------------------------------- JSON-RPC envelopes
class ErrorObject(Struct, kw_only=True):
    code: int
    message: str
    data: JSON | UnsetType = UNSET


class JSONRPCRequest(Struct, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    method: str
    params: dict[str, JSON] | UnsetType = UNSET


class JSONRPCNotification(Struct, kw_only=True):
    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, JSON] | UnsetType = UNSET


class JSONRPCResultResponse(Struct, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: dict[str, JSON]


class JSONRPCErrorResponse(Struct, kw_only=True):
    jsonrpc: Literal["2.0"]
    error: ErrorObject
    id: RequestId | UnsetType = UNSET
