"""A learned queue order: a linear priority function over each queued job's features, trained
by the cross-entropy method on whole training traces (:mod:`agents.priority.order`,
:mod:`agents.priority.train`; ``python -m agents.priority --help``).

The family is that of learned priority functions for backfilling schedulers (D. Carastan-Santos
and R. Y. de Camargo, "Obtaining dynamic scheduling policies with simulation and machine
learning", SC'17), here with palgym's variability-aware placements deciding the GPUs.
"""
