"""Helpers every stage may use: deep-recursion headroom (``deep``), fixed-width tables (``table``), a
stage's share of the budget (``deadline``) and handlers by op name (``registry``)."""
