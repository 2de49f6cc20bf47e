"""What an exploration returns (``exploration``) and how it is shown: text, JSON, Markdown, DOT
(``report``) and ``--explain`` (``explain``)."""

from egg_dispatch.result.explain import explain
from egg_dispatch.result.exploration import Candidate, CheckResult, Exploration
from egg_dispatch.result.report import dot, markdown, text, to_json

__all__ = ["Candidate", "CheckResult", "Exploration", "dot", "explain", "markdown", "text", "to_json"]
