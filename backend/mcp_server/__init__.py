"""The MCP server (issue 28): stdio (`python -m backend mcp`) and streamable HTTP at /mcp of the API."""
