"""Helpers every stage may use: deep-recursion headroom (``deep``) and fixed-width tables (``table``)."""
