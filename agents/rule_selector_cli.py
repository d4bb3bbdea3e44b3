"""``python -m agents.rule_selector_cli``: the command the committed rule-selector files record.

The selector files in ``agents/pretrained/rule-selector/`` record the command that made them as
``python -m agents.rule_selector_cli ...``; this module forwards it, unchanged, to
``python -m agents.selection`` (:mod:`agents.selection.cli`).
"""

from agents.selection.cli import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
