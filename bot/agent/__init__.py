"""The agent loop, generic over a tool registry, shared by the Bot and task Sessions."""
