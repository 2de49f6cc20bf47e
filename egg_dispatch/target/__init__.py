"""Targets: profiles (``profile.py``, JSON in ``profiles/``) and IREE's CPU encoding resolver (``layout.py``)."""
