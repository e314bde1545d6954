"""Accelerator architectures from the papers, as JSON data (``npusched/arch/v1``).

>>> from npusched.arch import load_arch, list_archs
>>> arch = load_arch("klotski-3x3")
>>> len(arch.cores)
9

:meth:`npusched.problem.Accelerator.from_arch` turns an :class:`Arch` into the scheduling spine's
accelerator.
"""

from npusched.arch.model import (
    CONV_DIMS,
    FORMAT,
    Arch,
    ArchError,
    CoreSpec,
    DramSpec,
    NocSpec,
    Register,
    Source,
    arch_from_dict,
    arch_to_dict,
    flexer_arch_name,
    list_archs,
    load_arch,
    read_arch,
    unroll_dims,
    write_arch,
)

__all__ = [
    "CONV_DIMS",
    "FORMAT",
    "Arch",
    "ArchError",
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
