"""The registry: every method of every decision behind one ``solve()`` and one ``Result``.

Importing this package registers the methods of each decision (:mod:`.scheduling`,
:mod:`.placement`); :data:`METHODS` lists them.
"""

from npusched.methods import (
    depth_first,
    flexer,
    lns,
    placement,
    reassign,
    scheduling,
    target,
    tiling,
)
from npusched.methods.registry import METHODS, Context, Method, NoParams, register, solve

__all__ = [
    "METHODS",
    "Context",
    "Method",
    "NoParams",
    "depth_first",
    "flexer",
    "lns",
    "placement",
    "reassign",
    "register",
    "scheduling",
    "solve",
    "target",
    "tiling",
]
