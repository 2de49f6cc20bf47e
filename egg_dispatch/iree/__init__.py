"""The harness around installed IREE tools: compile, run, benchmark (``tools``), IREE's own plan as text
(``dispatch_creation``). Optional: nothing else needs IREE installed."""
