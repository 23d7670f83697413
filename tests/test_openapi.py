"""OpenAPI -> MCP against a real HTTP API: a small ASGI app written here (a pet store that serves
its own OpenAPI 3.0 document at ``/openapi.json``), reached in-process through
``httpx.ASGITransport``; the tools are called through a real ``Client`` (in memory) and over
stdio by a subprocess server built with ``Server.from_openapi``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import msgspec
import pytest

from mcpkit import Server
from mcpkit.client import Client
from mcpkit.openapi import from_openapi
from tests.helpers.aio import read_body, run
from tests.helpers.paths import subprocess_env

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Pet store", "version": "1.2.3"},
    "servers": [{"url": "http://pets.test/v1"}],
    "components": {
        "schemas": {
            "Pet": {"type": "object", "required": ["id", "name"],
                    "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                   "tag": {"type": "string", "nullable": True}}},
            "NewPet": {"type": "object", "required": ["name"],
                       "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}},
        },
        "parameters": {"PetId": {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"},
                                 "description": "The pet's id"}},
    },
    "paths": {
        "/pets": {
            "get": {"operationId": "listPets", "summary": "List pets",
                    "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}},
                                   {"name": "X-Trace-Id", "in": "header", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "pets", "content": {"application/json": {
                        "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}},
            "post": {"operationId": "createPet", "summary": "Add a pet",
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": {"$ref": "#/components/schemas/NewPet"}}}},
                     "responses": {"201": {"description": "made", "content": {"application/json": {
                         "schema": {"$ref": "#/components/schemas/Pet"}}}}}},
        },
        "/pets/{petId}": {
            "parameters": [{"$ref": "#/components/parameters/PetId"}],
            "get": {"operationId": "getPet", "description": "One pet by id.",
                    "responses": {"200": {"description": "a pet", "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Pet"}}}}, "404": {"description": "none"}}},
            "delete": {"operationId": "deletePet", "responses": {"204": {"description": "gone"}}},
        },
        "/upload": {"post": {"operationId": "upload", "requestBody": {"required": True, "content": {
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
            "responses": {"200": {"description": "ok"}}}},
        "/text": {"get": {"responses": {"200": {"description": "plain", "content": {"text/plain": {}}}}}},
    },
}


def pet_store() -> Any:
    """The ASGI app: the pets live in memory; every request needs ``Authorization: Bearer k``."""
    pets: dict[int, dict[str, Any]] = {1: {"id": 1, "name": "Rex", "tag": "dog"}}
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = await read_body(receive)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        path, method = scope["path"], scope["method"]
        query = parse_qs(scope["query_string"].decode())
        seen.append({"method": method, "path": path, "query": query, "headers": headers})

        async def reply(status: int, data: Any = None, kind: str = "application/json") -> None:
            raw = b"" if data is None else (data.encode() if isinstance(data, str) else json.dumps(data).encode())
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", kind.encode()), (b"content-length", str(len(raw)).encode())]})
            await send({"type": "http.response.body", "body": raw})

        if path == "/openapi.json":
            return await reply(200, SPEC)
        if headers.get("authorization") != "Bearer k":
            return await reply(401, {"error": "no token"})
        if path == "/v1/pets" and method == "GET":
            limit = int(query.get("limit", ["100"])[0])
            return await reply(200, list(pets.values())[:limit])
        if path == "/v1/pets" and method == "POST":
            new = json.loads(body)
            if not isinstance(new.get("name"), str):
                return await reply(422, {"error": "name must be a string"})
            pet = {"id": max(pets) + 1, **new}
            pets[pet["id"]] = pet
            return await reply(201, pet)
        if path.startswith("/v1/pets/"):
            pid = int(path.rsplit("/", 1)[1])
            if pid not in pets:
                return await reply(404, {"error": f"no pet {pid}"})
            if method == "DELETE":
                del pets[pid]
                return await reply(204)
            return await reply(200, pets[pid])
        if path == "/v1/text":
            return await reply(200, "just text", "text/plain")
        return await reply(404, "<html><title>Not Found</title></html>", "text/html")

    app.seen = seen  # type: ignore[attr-defined]
    return app


def _api(app: Any, **options: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), headers={"Authorization": "Bearer k"}, **options)


def test_operations_become_tools_with_their_schemas() -> None:
    async def main() -> dict[str, Any]:
        app = pet_store()
        async with _api(app) as api:
            spec = (await api.get("http://pets.test/openapi.json")).json()  # the app serves its own document
            server = Server.from_openapi(spec, client=api)
            async with Client(server) as client:
                return {t.name: msgspec.to_builtins(t) for t in await client.list_tools()}

    tools = run(main(), 30)
    assert set(tools) == {"listPets", "createPet", "getPet", "deletePet", "get_text"}  # upload: not JSON, skipped
    listing = tools["listPets"]
    assert listing["description"] == "List pets"
    assert listing["annotations"] == {"readOnlyHint": True}
    assert listing["inputSchema"] == {"type": "object", "properties": {
        "limit": {"type": "integer"}, "X_Trace_Id": {"type": "string"}}}
    assert listing["outputSchema"]["properties"]["result"]["items"]["properties"]["tag"] == {"type": ["string", "null"]}
    get = tools["getPet"]
    assert get["inputSchema"] == {"type": "object", "required": ["petId"], "properties": {
        "petId": {"type": "integer", "description": "The pet's id"}}}
    assert get["outputSchema"]["required"] == ["id", "name"]
    assert tools["createPet"]["inputSchema"]["required"] == ["body"]
    assert tools["createPet"]["inputSchema"]["properties"]["body"]["required"] == ["name"]
    assert tools["deletePet"]["annotations"] == {"destructiveHint": True}
    assert "outputSchema" not in tools["deletePet"]


def test_calls_reach_the_api() -> None:
    async def main() -> tuple[Any, ...]:
        app = pet_store()
        async with _api(app) as api:
            server = from_openapi(SPEC, client=api)
            async with Client(server) as client:
                listed = await client.call_tool("listPets", {"limit": 1, "X_Trace_Id": "t-1"})
                made = await client.call_tool("createPet", {"body": {"name": "Tom", "tag": "cat"}})
                one = await client.call_tool("getPet", {"petId": made.structuredContent["id"]})
                gone = await client.call_tool("deletePet", {"petId": 1})
                text = await client.call_tool("get_text", {})
                missing = await client.call_tool("getPet", {"petId": 1})
                bad = await client.call_tool("createPet", {"body": {"name": 5}})
                no_id = await client.call_tool("getPet", {})
        return listed, made, one, gone, text, missing, bad, no_id, app.seen

    listed, made, one, gone, text, missing, bad, no_id, seen = run(main(), 30)
    assert listed.structuredContent == {"result": [{"id": 1, "name": "Rex", "tag": "dog"}]}
    assert json.loads(listed.content[0].text) == [{"id": 1, "name": "Rex", "tag": "dog"}]
    first = seen[0]
    assert (first["method"], first["path"], first["query"]) == ("GET", "/v1/pets", {"limit": ["1"]})
    assert first["headers"]["x-trace-id"] == "t-1" and first["headers"]["authorization"] == "Bearer k"
    assert made.structuredContent == {"id": 2, "name": "Tom", "tag": "cat"} and not made.isError
    assert one.structuredContent == made.structuredContent
    assert not gone.isError and gone.content[0].text == "HTTP 204 No Content"
    assert text.content[0].text == "just text" and text.structuredContent is None
    assert missing.isError and missing.content[0].text == 'GET /pets/1: HTTP 404 Not Found: {"error": "no pet 1"}'
    assert bad.isError and "HTTP 422" in bad.content[0].text and "name must be a string" in bad.content[0].text
    assert no_id.isError and "missing required field `petId`" in no_id.content[0].text


def test_auth_and_unreachable_apis_are_tool_errors() -> None:
    async def main() -> tuple[Any, Any]:
        app = pet_store()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as anonymous:
            async with Client(from_openapi(SPEC, client=anonymous)) as client:
                refused = await client.call_tool("listPets", {})
        async with httpx.AsyncClient(base_url="http://127.0.0.1:1", timeout=5) as nowhere:
            async with Client(from_openapi(SPEC, client=nowhere, include={"listPets"})) as client:
                assert [t.name for t in await client.list_tools()] == ["listPets"]
                failed = await client.call_tool("listPets", {})
        return refused, failed

    refused, failed = run(main(), 30)
    assert refused.isError and "HTTP 401" in refused.content[0].text and "no token" in refused.content[0].text
    assert failed.isError and failed.content[0].text.startswith("GET /pets failed:")


def test_bad_documents_are_refused() -> None:
    api = httpx.AsyncClient()
    with pytest.raises(ValueError, match="not an OpenAPI 3 document"):
        from_openapi({"swagger": "2.0", "paths": {}}, client=api)
    with pytest.raises(ValueError, match="not JSON"):
        from_openapi("openapi: 3.0.0", client=api)
    with pytest.raises(ValueError, match="no paths"):
        from_openapi({"openapi": "3.1.0"}, client=api)
    remote = {"openapi": "3.1.0", "paths": {"/a": {"get": {"operationId": "a", "parameters": [
        {"$ref": "https://elsewhere.test/p.json"}]}}, "/b": {"get": {"operationId": "b"}}}}
    server = from_openapi(json.dumps(remote), client=api, name="partial")
    assert sorted(server.tools) == ["b"]  # a remote $ref is never fetched: that operation is left out


def test_an_openapi_server_over_stdio(tmp_path: Path) -> None:
    """The same tools from a real server process, spoken to over stdio."""
    script = tmp_path / "openapi_server.py"
    script.write_text(textwrap.dedent("""
        import httpx
        from mcpkit import Server
        from tests.test_openapi import SPEC, pet_store

        api = httpx.AsyncClient(transport=httpx.ASGITransport(app=pet_store()), headers={"Authorization": "Bearer k"})
        server = Server.from_openapi(SPEC, client=api, name="pets")

        if __name__ == "__main__":
            server.run()
    """))
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "call", "getPet", "petId=1", str(script)],
                          capture_output=True, text=True, env=subprocess_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"id": 1, "name": "Rex", "tag": "dog"}
