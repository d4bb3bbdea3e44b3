"""File formats palgym reads and writes itself (explicit paths only, no pandas).

- :func:`read_sia_trace`: the Sia / PAL trace CSV (``job_id,num_gpus,submit_time,duration,model``
  with an optional ``batch_size``).
- :func:`read_measurements`: PAL-style per-run variability measurements (``uuid``, ``perf``), one
  file per perf class found by :func:`resolve_class_files` (workload names or a class mapping).
- :func:`read_profile` / :func:`write_profile`: palgym's per-GPU profile CSV
  (``gpu,perfvar_classA,...,perfvar_classD``).
- :func:`atomic_write_text`: write-then-rename, so a half-written file never replaces a good one;
  :func:`check_destination`: refuse an unwritable destination before the work.
"""

from palgym.io.atomic import atomic_write_text, check_destination
from palgym.io.class_files import MAPPING_FILE_NAME, ClassFiles, resolve_class_files
from palgym.io.measurements import LONGHORN_CLASS_FILES, Measurements, read_measurements
from palgym.io.profile_file import read_profile, write_profile
from palgym.io.sia import DurationUnit, read_sia_trace

__all__ = [
    "LONGHORN_CLASS_FILES",
    "MAPPING_FILE_NAME",
    "ClassFiles",
    "DurationUnit",
    "Measurements",
    "atomic_write_text",
    "check_destination",
    "read_measurements",
    "read_profile",
    "read_sia_trace",
    "resolve_class_files",
    "write_profile",
]
