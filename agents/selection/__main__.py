"""``python -m agents.selection``: train, evaluate and distil learned rule selectors."""

from agents.selection.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
