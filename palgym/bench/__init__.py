"""palgym-bench: frozen benchmark suites, results files, their replay, honest statistics and the
generated leaderboard (docs/LEADERBOARD.md, docs/SUBMITTING.md)."""
