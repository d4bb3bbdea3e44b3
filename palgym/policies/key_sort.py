"""Jobs ordered by (priority, key 1, key 2, job index), compiled: the comparison, sorting,
merging and binary insertion :mod:`palgym.policies.order_kernel` keeps its queue orders sorted
with.

``keys`` is always ``(priority, key_1, key_2)``, arrays indexed by job index (int64, float64,
float64); floats compare as numpy sorts them (ascending, NaN last), so the ordering is the one
``np.lexsort`` gives with ties in index order. Importing this module imports numba (see
:mod:`palgym._numba`).
"""

from __future__ import annotations

from palgym._numba import njit


@njit(cache=True, nogil=True, inline="always")
def float_less(a, b):  # type: ignore[no-untyped-def]
    """numpy's sort order of floats: ascending, NaN last."""
    return a < b or (b != b and a == a)


@njit(cache=True, nogil=True, inline="always")
def key_less(keys, a, b):  # type: ignore[no-untyped-def]
    """Job ``a`` before job ``b`` by (priority, key 1, key 2, index), on the memo's ``keys``
    = (priority, key_1, key_2) (:class:`OrderMemo`)."""
    priority, key_1, key_2 = keys
    if priority[a] != priority[b]:
        return priority[a] < priority[b]
    a1, b1 = key_1[a], key_1[b]
    if float_less(a1, b1):
        return True
    if float_less(b1, a1):
        return False
    a2, b2 = key_2[a], key_2[b]
    if float_less(a2, b2):
        return True
    if float_less(b2, a2):
        return False
    return a < b


@njit(cache=True, nogil=True, inline="always")
def upper_bound(keys, job, order, low, high):  # type: ignore[no-untyped-def]
    """The first position in the sorted ``order[low:high]`` whose job comes after ``job`` by
    :func:`key_less` on ``keys`` (binary search; ``high`` if none does)."""
    while low < high:
        middle = (low + high) // 2
        if key_less(keys, job, order[middle]):
            high = middle
        else:
            low = middle + 1
    return low


@njit(cache=True, nogil=True, inline="always")
def same_key(a, b):  # type: ignore[no-untyped-def]
    """Equal floats or both NaN (a key that sorts the same)."""
    return a == b or (a != a and b != b)


@njit(cache=True, nogil=True)
def sort_by_keys(keys, items, scratch):  # type: ignore[no-untyped-def]
    """Sort ``items`` (job indices) in place by :func:`key_less`: insertion sort for a few,
    merge sort (bottom-up, through ``scratch``) for more."""
    n = items.size
    if n <= 16:
        for i in range(1, n):
            job = items[i]
            k = i
            while k > 0 and key_less(keys, job, items[k - 1]):
                items[k] = items[k - 1]
                k -= 1
            items[k] = job
        return
    width = 1
    other = scratch[:n]
    in_items = True  # where the sorted runs of the current width are
    while width < n:
        source, target = (items, other) if in_items else (other, items)
        for start in range(0, n, 2 * width):
            middle, end = min(start + width, n), min(start + 2 * width, n)
            merge_by_keys(keys, source[start:middle], source[middle:end],
                   target[start:end])
        in_items = not in_items
        width *= 2
    if not in_items:
        items[:] = other


@njit(cache=True, nogil=True, inline="always")
def merge_by_keys(keys, left, right, out):  # type: ignore[no-untyped-def]
    """Merge the sorted (by :func:`key_less` on ``keys``) ``left`` and ``right`` into ``out``."""
    i = k = 0
    for n in range(out.size):
        if k == right.size or (i < left.size
                               and not key_less(keys, right[k], left[i])):
            out[n] = left[i]
            i += 1
        else:
            out[n] = right[k]
            k += 1


@njit(cache=True, nogil=True)
def insert_by_keys(keys, moved, order, kept):  # type: ignore[no-untyped-def]
    """Merge the sorted (by :func:`key_less` on ``keys``) ``moved`` into the sorted
    ``order[:kept]`` in place, from the back (binary search for each; ``order`` has room for
    both)."""
    end = kept  # order[:end] is not placed yet
    for k in range(moved.size - 1, -1, -1):
        job = moved[k]
        low = upper_bound(keys, job, order, 0, end)
        for t in range(end - 1, low - 1, -1):
            order[t + k + 1] = order[t]
        order[low + k] = job
        end = low
