"""Run level, pytest-free: the one question path, the LLM runtime, the results store, shards."""
