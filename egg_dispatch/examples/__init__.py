"""Built-in example programs (package data)."""
