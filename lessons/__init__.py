"""The workshop lessons, and the small tools that keep them executable (see lessons/README.md)."""
