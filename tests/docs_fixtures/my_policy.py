"""The `my_policy.py` of the documentation's commands (tests/python/test_docs.py):
an inlining policy. Features arrive as numpy arrays by name (MLGO's inliner
features when a compiler serves them); the advice is an int."""


def decide(features):
    """Inline a callee that has a single caller."""
    return int(features["callee_users"].item() <= 1)
