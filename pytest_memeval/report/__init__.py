"""Summary model and renderers (terminal, JSON)."""
