"""The module path the committed model zips record for their policy class.

Models saved before the SB3 code moved to :mod:`agents.sb3` pickle their policy class as
``agents.policies.CandidateScoringPolicy`` (``agents/pretrained/*.zip``); this name keeps them
loadable, with or without ``trust_model``. The class lives in :mod:`agents.sb3.policies`.
"""

from agents.sb3.policies import CandidateScoringPolicy

__all__ = ["CandidateScoringPolicy"]
