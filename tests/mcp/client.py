#!/usr/bin/env python3
"""Drives `agentcron mcp` the way an agent host does: through the stdio
client of the Python MCP SDK (PyPI `mcp`), a client this project did not
write. Started by tests/cli/mcp.rs with the interpreter that
scripts/ensure-mcp-client installs.

Reads one JSON document on stdin:
  {"command": [...server argv...], "env": {...}, "client": "NAME",
   "steps": [{"op": "list_tools"} | {"op": "call", "tool": T, "arguments": {...}}]}
and prints one JSON document: {"server": NAME, "instructions": TEXT,
"results": [...]} with, per step, the tools as listed (by alias, as on the
wire) or the call's result ({"is_error", "text", "structured"}) or its
protocol error ({"protocol_error": {"code", "message"}}); when no session
could be started, {"connect_error": TEXT}. The Rust test judges them.
"""

import json
import sys

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client, types


def wire(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def step(session, spec):
    if spec["op"] == "list_tools":
        listed = await session.list_tools()
        return {"tools": [wire(tool) for tool in listed.tools]}
    try:
        result = await session.call_tool(spec["tool"], spec.get("arguments", {}))
    except MCPError as err:
        return {"protocol_error": {"code": err.error.code, "message": err.error.message}}
    text = "\n".join(block.text for block in result.content if block.type == "text")
    return {
        "is_error": bool(result.is_error),
        "text": text,
        "structured": result.structured_content,
    }


async def main():
    spec = json.load(sys.stdin)
    command = spec["command"]
    params = StdioServerParameters(command=command[0], args=command[1:], env=spec.get("env"))
    out = {"results": []}
    try:
        async with stdio_client(params, errlog=sys.stderr) as (read, write):
            info = types.Implementation(name=spec["client"], version="1.0")
            async with ClientSession(read, write, client_info=info) as session:
                with anyio.fail_after(30):
                    init = await session.initialize()
                    out["server"] = init.server_info.name
                    out["instructions"] = init.instructions
                    for s in spec["steps"]:
                        out["results"].append(await step(session, s))
    except Exception as err:  # the server refused to start, or died
        out["connect_error"] = f"{type(err).__name__}: {err}"
    print(json.dumps(out))


anyio.run(main)
