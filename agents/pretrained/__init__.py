"""The committed models (``NAME.zip`` with its run config ``NAME.yml``, learning curve
``NAME-evaluations.npz`` and references ``NAME-references.yml``; README.md says how each was
trained). ``python -m agents.pretrained`` lists them (:mod:`agents.pretrained.__main__`)."""
