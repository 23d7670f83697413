"""Typed 2026-07-28 wire messages (msgspec Structs), mirroring ``schema.ts``.

Optional fields default to ``UNSET`` so they are left out on encode. ``_meta`` and
``$schema`` are spelled on the wire through field renames. Tagged unions (content blocks,
completion references) keep their tag as a ``type`` class attribute, so ``block.type`` reads
as on the wire. ``CallToolResult.isError`` reads False and ``structuredContent`` None when
absent; neither is encoded then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union

import msgspec
from msgspec import UNSET, UnsetType, field

JSON = Any
RequestId = Union[int, str]
ProgressToken = Union[int, str]
Role = Literal["user", "assistant"]
LoggingLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
CacheScope = Literal["public", "private"]


class Struct(msgspec.Struct, omit_defaults=True, kw_only=True):
    """Base for every wire type: optional fields are omitted when unset."""


# ---------------------------------------------------------------- common
class Icon(Struct, kw_only=True):
    src: str
    mimeType: str | UnsetType = UNSET
    sizes: list[str] | UnsetType = UNSET
    theme: Literal["light", "dark"] | UnsetType = UNSET


class Implementation(Struct, kw_only=True):
    name: str
    version: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    websiteUrl: str | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET


class Annotations(Struct, kw_only=True):
    audience: list[Role] | UnsetType = UNSET
    priority: float | UnsetType = UNSET
    lastModified: str | UnsetType = UNSET


class ClientCapabilities(Struct, kw_only=True):
    experimental: dict[str, dict[str, JSON]] | UnsetType = UNSET
    roots: dict[str, JSON] | UnsetType = UNSET
    sampling: dict[str, JSON] | UnsetType = UNSET
    elicitation: dict[str, JSON] | UnsetType = UNSET
    extensions: dict[str, dict[str, JSON]] | UnsetType = UNSET


class ListChangedCapability(Struct, kw_only=True):
    listChanged: bool | UnsetType = UNSET


class ResourcesCapability(Struct, kw_only=True):
    subscribe: bool | UnsetType = UNSET
    listChanged: bool | UnsetType = UNSET


class ServerCapabilities(Struct, kw_only=True):
    experimental: dict[str, dict[str, JSON]] | UnsetType = UNSET
    logging: dict[str, JSON] | UnsetType = UNSET
    completions: dict[str, JSON] | UnsetType = UNSET
    prompts: ListChangedCapability | UnsetType = UNSET
    resources: ResourcesCapability | UnsetType = UNSET
    tools: ListChangedCapability | UnsetType = UNSET
    extensions: dict[str, dict[str, JSON]] | UnsetType = UNSET


class RequestMeta(Struct, forbid_unknown_fields=False, kw_only=True):
    """A request's ``_meta``: the two required keys are typed; the rest stay open."""

    protocolVersion: str = field(name="io.modelcontextprotocol/protocolVersion")
    clientCapabilities: ClientCapabilities = field(name="io.modelcontextprotocol/clientCapabilities")
    clientInfo: Implementation | UnsetType = field(default=UNSET, name="io.modelcontextprotocol/clientInfo")
    logLevel: LoggingLevel | UnsetType = field(default=UNSET, name="io.modelcontextprotocol/logLevel")
    progressToken: ProgressToken | UnsetType = UNSET


# ---------------------------------------------------------------- content
class TextContent(Struct, tag_field="type", tag="text", kw_only=True):
    type: ClassVar[Literal["text"]] = "text"
    text: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class ImageContent(Struct, tag_field="type", tag="image", kw_only=True):
    type: ClassVar[Literal["image"]] = "image"
    data: str
    mimeType: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class AudioContent(Struct, tag_field="type", tag="audio", kw_only=True):
    type: ClassVar[Literal["audio"]] = "audio"
    data: str
    mimeType: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class Resource(Struct, kw_only=True):
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mimeType: str | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    size: int | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class ResourceLink(Resource, tag_field="type", tag="resource_link", kw_only=True):
    """A content block pointing at a resource: the Resource fields plus ``type``."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"


class ResourceContents(Struct, kw_only=True):
    """Text or blob contents of a resource: exactly one of ``text`` and ``blob`` is set."""

    uri: str
    mimeType: str | UnsetType = UNSET
    text: str | UnsetType = UNSET
    blob: str | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class EmbeddedResource(Struct, tag_field="type", tag="resource", kw_only=True):
    type: ClassVar[Literal["resource"]] = "resource"
    resource: ResourceContents
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


ContentBlock = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]



# ---------------------------------------------------------------- primitives
class ToolAnnotations(Struct, kw_only=True):
    title: str | UnsetType = UNSET
    readOnlyHint: bool | UnsetType = UNSET
    destructiveHint: bool | UnsetType = UNSET
    idempotentHint: bool | UnsetType = UNSET
    openWorldHint: bool | UnsetType = UNSET


class Tool(Struct, kw_only=True):
    name: str
    inputSchema: dict[str, JSON]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    outputSchema: dict[str, JSON] | UnsetType = UNSET
    annotations: ToolAnnotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class ResourceTemplate(Struct, kw_only=True):
    uriTemplate: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mimeType: str | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class PromptArgument(Struct, kw_only=True):
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    required: bool | UnsetType = UNSET


class Prompt(Struct, kw_only=True):
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    arguments: list[PromptArgument] | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class PromptMessage(Struct, kw_only=True):
    role: Role
    content: ContentBlock


# ---------------------------------------------------------------- client input (MRTR)
class InputRequest(Struct, kw_only=True):
    """One entry of ``inputRequests``: a request object without ``jsonrpc`` or ``id``."""

    method: Literal["elicitation/create", "sampling/createMessage", "roots/list"]
    params: dict[str, JSON] | UnsetType = UNSET


# ---------------------------------------------------------------- request params
class RequestParams(Struct, kw_only=True):
    # Kept as a dict so handlers see every key; the ladder validates it as RequestMeta.
    meta: dict[str, JSON] = field(name="_meta")


class PaginatedParams(RequestParams, kw_only=True):
    cursor: str | UnsetType = UNSET


class InputResponseParams(RequestParams, kw_only=True):
    inputResponses: dict[str, dict[str, JSON]] | UnsetType = UNSET
    requestState: str | UnsetType = UNSET


class CallToolParams(InputResponseParams, kw_only=True):
    name: str
    arguments: dict[str, JSON] | None | UnsetType = UNSET
    #: A 2025-11-25 task-augmented call's ``task`` (``{"ttl": ...}``); 2026-07-28 has none.
    task: dict[str, JSON] | UnsetType = UNSET


class GetPromptParams(InputResponseParams, kw_only=True):
    name: str
    arguments: dict[str, str] | None | UnsetType = UNSET


class ReadResourceParams(InputResponseParams, kw_only=True):
    uri: str


class PromptReference(Struct, tag_field="type", tag="ref/prompt", kw_only=True):
    type: ClassVar[Literal["ref/prompt"]] = "ref/prompt"
    name: str
    title: str | UnsetType = UNSET


class ResourceTemplateReference(Struct, tag_field="type", tag="ref/resource", kw_only=True):
    type: ClassVar[Literal["ref/resource"]] = "ref/resource"
    uri: str


class CompletionArgument(Struct, kw_only=True):
    name: str
    value: str


class CompletionContext(Struct, kw_only=True):
    arguments: dict[str, str] | UnsetType = UNSET


class CompleteParams(RequestParams, kw_only=True):
    ref: Union[PromptReference, ResourceTemplateReference]
    argument: CompletionArgument
    context: CompletionContext | UnsetType = UNSET


class SubscriptionFilter(Struct, kw_only=True):
    toolsListChanged: bool | UnsetType = UNSET
    promptsListChanged: bool | UnsetType = UNSET
    resourcesListChanged: bool | UnsetType = UNSET
    resourceSubscriptions: list[str] | UnsetType = UNSET
    #: Tasks extension (SEP-2663): ``notifications/tasks`` for these task ids.
    taskIds: list[str] | UnsetType = UNSET


class ListenParams(RequestParams, kw_only=True):
    notifications: SubscriptionFilter


#: The params type of each modern client request method.
REQUEST_PARAMS: dict[str, type[RequestParams]] = {
    "server/discover": RequestParams,
    "tools/list": PaginatedParams,
    "tools/call": CallToolParams,
    "resources/list": PaginatedParams,
    "resources/templates/list": PaginatedParams,
    "resources/read": ReadResourceParams,
    "prompts/list": PaginatedParams,
    "prompts/get": GetPromptParams,
    "completion/complete": CompleteParams,
    "subscriptions/listen": ListenParams,
}


# ---------------------------------------------------------------- results
def _complete() -> str:
    return "complete"


def _input_required() -> str:
    return "input_required"


class Result(Struct, kw_only=True):
    # A factory, not a plain default, so omit_defaults never drops the required field.
    resultType: str = field(default_factory=_complete)
    meta: dict[str, JSON] | UnsetType = field(default=UNSET, name="_meta")


class CacheableResult(Result, kw_only=True):
    ttlMs: int
    cacheScope: CacheScope


class DiscoverResult(CacheableResult, kw_only=True):
    supportedVersions: list[str]
    capabilities: ServerCapabilities
    instructions: str | UnsetType = UNSET


class ListToolsResult(CacheableResult, kw_only=True):
    tools: list[Tool]
    nextCursor: str | UnsetType = UNSET


class ListResourcesResult(CacheableResult, kw_only=True):
    resources: list[Resource]
    nextCursor: str | UnsetType = UNSET


class ListResourceTemplatesResult(CacheableResult, kw_only=True):
    resourceTemplates: list[ResourceTemplate]
    nextCursor: str | UnsetType = UNSET


class ListPromptsResult(CacheableResult, kw_only=True):
    prompts: list[Prompt]
    nextCursor: str | UnsetType = UNSET


class ReadResourceResult(CacheableResult, kw_only=True):
    contents: list[ResourceContents]


class CallToolResult(Result, kw_only=True):
    content: list[ContentBlock]
    #: A JSON object; None when absent.
    structuredContent: dict[str, JSON] | None = None
    #: False when absent (and left out on the wire when False).
    isError: bool = False


class GetPromptResult(Result, kw_only=True):
    messages: list[PromptMessage]
    description: str | UnsetType = UNSET


class Completion(Struct, kw_only=True):
    values: list[str]
    total: int | UnsetType = UNSET
    hasMore: bool | UnsetType = UNSET


class CompleteResult(Result, kw_only=True):
    completion: Completion


class InputRequiredResult(Result, kw_only=True):
    resultType: str = field(default_factory=_input_required)
    inputRequests: dict[str, InputRequest] | UnsetType = UNSET
    requestState: str | UnsetType = UNSET


class SubscriptionsListenResult(Result, kw_only=True):
    pass


#: The complete-result type of each modern method.
RESULT_TYPES: dict[str, type[Result]] = {
    "server/discover": DiscoverResult,
    "tools/list": ListToolsResult,
    "tools/call": CallToolResult,
    "resources/list": ListResourcesResult,
    "resources/templates/list": ListResourceTemplatesResult,
    "resources/read": ReadResourceResult,
    "prompts/list": ListPromptsResult,
    "prompts/get": GetPromptResult,
    "completion/complete": CompleteResult,
    "subscriptions/listen": SubscriptionsListenResult,
}


def request_target(params: object) -> tuple[str | None, str | None]:
    """What a decoded request is about, as ``(name, uri)``: the tool or prompt name of
    ``tools/call`` / ``prompts/get``, the URI of ``resources/read``; (None, None) otherwise.
    For middleware (telemetry, rate limits) that sees every method's params."""
    if isinstance(params, (CallToolParams, GetPromptParams)):
        return params.name, None
    if isinstance(params, ReadResourceParams):
        return None, params.uri
    return None, None


# ---------------------------------------------------------------- defined on first use
#: Names of this module defined in :mod:`._types_more` (sampling, elicitation, roots,
#: notification params, JSON-RPC envelopes): made when first read, not by a cold start.
_MORE = frozenset({
    'ToolUseContent',
    'ToolResultContent',
    'SamplingContentBlock',
    'SamplingMessage',
    'ModelHint',
    'ModelPreferences',
    'ToolChoice',
    'CreateMessageRequestParams',
    'CreateMessageResult',
    'ElicitRequestParams',
    'ElicitResult',
    'Root',
    'ListRootsResult',
    'NotificationParams',
    'CancelledParams',
    'ProgressParams',
    'LoggingMessageParams',
    'ResourceUpdatedParams',
    'SubscriptionsAcknowledgedParams',
    'NOTIFICATION_PARAMS',
    'ErrorObject',
    'JSONRPCRequest',
    'JSONRPCNotification',
    'JSONRPCResultResponse',
    'JSONRPCErrorResponse',
})

if TYPE_CHECKING:
    from ._types_more import NOTIFICATION_PARAMS as NOTIFICATION_PARAMS
    from ._types_more import CancelledParams as CancelledParams
    from ._types_more import CreateMessageRequestParams as CreateMessageRequestParams
    from ._types_more import CreateMessageResult as CreateMessageResult
    from ._types_more import ElicitRequestParams as ElicitRequestParams
    from ._types_more import ElicitResult as ElicitResult
    from ._types_more import ErrorObject as ErrorObject
    from ._types_more import JSONRPCErrorResponse as JSONRPCErrorResponse
    from ._types_more import JSONRPCNotification as JSONRPCNotification
    from ._types_more import JSONRPCRequest as JSONRPCRequest
    from ._types_more import JSONRPCResultResponse as JSONRPCResultResponse
    from ._types_more import ListRootsResult as ListRootsResult
    from ._types_more import LoggingMessageParams as LoggingMessageParams
    from ._types_more import ModelHint as ModelHint
    from ._types_more import ModelPreferences as ModelPreferences
    from ._types_more import NotificationParams as NotificationParams
    from ._types_more import ProgressParams as ProgressParams
    from ._types_more import ResourceUpdatedParams as ResourceUpdatedParams
    from ._types_more import Root as Root
    from ._types_more import SamplingContentBlock as SamplingContentBlock
    from ._types_more import SamplingMessage as SamplingMessage
    from ._types_more import SubscriptionsAcknowledgedParams as SubscriptionsAcknowledgedParams
    from ._types_more import ToolChoice as ToolChoice
    from ._types_more import ToolResultContent as ToolResultContent
    from ._types_more import ToolUseContent as ToolUseContent


def __getattr__(name: str) -> Any:
    if name in _MORE:
        from . import _types_more

        value = globals()[name] = getattr(_types_more, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _MORE)
