"""kfin mcp: kfin's answers served to assistants over the Model Context Protocol (the `mcp` SDK, an extra)."""
