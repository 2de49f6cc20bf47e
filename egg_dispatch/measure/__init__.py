"""Plans measured for real: compiled with IREE and timed on this CPU (``bench``)."""
