"""Accelerator architectures from the papers, as JSON data (``npusched/arch/v1``), and Stream's
accelerator YAMLs (:mod:`npusched.arch.stream_yaml`), both read by :func:`load_arch`.

>>> from npusched.arch import load_arch, list_archs
>>> arch = load_arch("klotski-3x3")
>>> len(arch.cores)
9

:meth:`npusched.problem.Accelerator.from_arch` turns an :class:`Arch` into the scheduling spine's
accelerator.
"""

from npusched.arch.files import (
    arch_from_dict,
    arch_to_dict,
    flexer_arch_name,
    list_archs,
    load_arch,
    read_arch,
    write_arch,
)
from npusched.arch.model import (
    CONV_DIMS,
    FORMAT,
    Arch,
    ArchError,
    Bus,
    CoreSpec,
    DramSpec,
    NocSpec,
    Register,
    Source,
    unroll_dims,
)

__all__ = [
    "CONV_DIMS",
    "FORMAT",
    "Arch",
    "ArchError",
    "Bus",
    "CoreSpec",
    "DramSpec",
    "NocSpec",
    "Register",
    "Source",
    "arch_from_dict",
    "arch_to_dict",
    "flexer_arch_name",
    "list_archs",
    "load_arch",
    "read_arch",
    "unroll_dims",
    "write_arch",
]
