"""Which registration a request names, and the OAuth scopes that takes: one answer shared by
the handlers (which serve it) and the transport's gate (which checks it), so what is checked
is always what is served.

Pure lookups over the server's registries: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..protocol import types as t
from ._primitives import PromptDef, ResourceDef, TemplateDef

if TYPE_CHECKING:
    from ._server import Server

NO_SCOPES: frozenset[str] = frozenset()
#: At most this many resource URIs of one ``subscriptions/listen`` are looked up for scopes;
#: a longer list needs every scope any registration asks for.
MAX_LOOKUPS = 256


def resolve_resource(resources: Mapping[str, ResourceDef], templates: Mapping[str, TemplateDef],
                     uri: str) -> tuple[ResourceDef | TemplateDef, dict[str, Any]] | None:
    """The registration that serves ``uri`` and the handler arguments bound from it.

    A resource registered at exactly ``uri`` first; else the first template (in registration
    order) that matches ``uri`` and whose variables convert to its handler's types. None:
    no such resource.
    """
    res = resources.get(uri)
    if res is not None:
        return res, {}
    for tmpl in templates.values():
        vars_ = tmpl.template.match(uri)
        if vars_ is None:
            continue
        names = tmpl.sig.param_names
        try:
            args = msgspec.convert({k: v for k, v in vars_.items() if k in names}, tmpl.sig.args_type, strict=False)
        except msgspec.ValidationError:
            continue  # variables of the wrong type: this template does not name it
        return tmpl, {n: getattr(args, n) for n in names}  # the fields of the handler's own argument struct
    return None


def resource_scopes(resources: Mapping[str, ResourceDef], templates: Mapping[str, TemplateDef],
                    uri: str) -> frozenset[str]:
    """The scopes reading ``uri`` takes (those of the registration that would serve it)."""
    found = resolve_resource(resources, templates, uri)
    return found[0].scopes if found is not None else NO_SCOPES


def completion_target(server: Server, ref: t.PromptReference | t.ResourceTemplateReference
                      ) -> PromptDef | ResourceDef | TemplateDef | None:
    """The prompt, resource template or resource a ``completion/complete`` refers to."""
    if isinstance(ref, t.PromptReference):
        return server.prompts.get(ref.name)
    return server.resource_templates.get(ref.uri) or server.resources.get(ref.uri)


def allowed(auth: Any, scopes: frozenset[str]) -> bool:
    """Whether the caller ``auth`` (None: not authenticated, e.g. stdio) may use something
    that takes ``scopes``. The same rule as the HTTP gate's for ``tools/call``."""
    return not scopes or auth is None or bool(auth.allows(scopes))


def _field(params: Any, name: str) -> Any:
    # A field by name of the typed params (a msgspec Struct of any method) or of a raw dict.
    return params.get(name) if isinstance(params, dict) else getattr(params, name, None)


def _listen_uris(params: Any) -> Iterable[Any]:
    notifications = _field(params, "notifications")
    if notifications is None:
        return ()
    uris = _field(notifications, "resourceSubscriptions")
    return uris if isinstance(uris, list) else ()


def required_scopes(server: Server, method: str, params: Any, method_scopes: Mapping[str, frozenset[str]]
                    ) -> frozenset[str]:
    """The scopes one request needs: its method's, plus those of the tool, prompt or
    resource(s) it names (``resources/read``, legacy ``resources/subscribe`` and the
    ``resourceSubscriptions`` of ``subscriptions/listen``, like a read of each).

    ``completion/complete`` is not here: a reference the caller may not use is answered
    like an unknown one by the handler (a 403 would confirm that it exists).
    """
    needed = method_scopes.get(method, NO_SCOPES)
    if method == "tools/call" or method == "prompts/get":
        name = _field(params, "name")
        if isinstance(name, str):
            d = server.tools.get(name) if method == "tools/call" else server.prompts.get(name)
            if d is not None and d.scopes:
                needed = needed | d.scopes
    elif method == "resources/read" or method == "resources/subscribe":
        uri = _field(params, "uri")
        if isinstance(uri, str):
            needed = needed | resource_scopes(server.resources, server.resource_templates, uri)
    elif method == "subscriptions/listen":
        uris = [u for u in dict.fromkeys(u for u in _listen_uris(params) if isinstance(u, str))]
        if len(uris) > MAX_LOOKUPS:
            scoped = [r.scopes for r in server.resources.values()]
            scoped += [tm.scopes for tm in server.resource_templates.values()]
            return needed.union(*scoped)
        for uri in uris:
            needed = needed | resource_scopes(server.resources, server.resource_templates, uri)
    return needed
