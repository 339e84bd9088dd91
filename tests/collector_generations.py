"""Where the cyclic garbage collector keeps an object: in which of its three generations, or in
none (frozen, or not tracked). Tests of code that freezes or promotes objects check by an object of
their own, never by a generation's size, which other threads of a suite move at any time."""

from __future__ import annotations

import gc

GENERATIONS = (0, 1, 2)


def in_generation(obj: object, *generations: int) -> bool:
    """Whether ``obj`` is in one of ``generations`` (all three when none is given)."""
    return any(o is obj for generation in generations or GENERATIONS for o in gc.get_objects(generation=generation))
