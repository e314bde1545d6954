"""Accelerator architectures from the papers, as JSON data (``npusched/arch/v1``).

>>> from npusched.arch import load_arch, list_archs
>>> arch = load_arch("klotski-3x3")
>>> arch.to_accelerator().m
9
"""

from npusched.arch.model import (
    CONV_DIMS,
    FORMAT,
    Arch,
    ArchError,
    CoreSpec,
    DramSpec,
    NocSpec,
    Source,
    arch_from_dict,
    arch_to_dict,
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
    "Source",
    "arch_from_dict",
    "arch_to_dict",
    "list_archs",
    "load_arch",
    "read_arch",
    "unroll_dims",
    "write_arch",
]
