"""The kernel's own extensions, built in the candidate worker: torch.utils.cpp_extension's loaders wrapped so each
kernel's extension names carry a suffix of its source hash. torch only; called before the kernel is imported.
"""

from __future__ import annotations

from typing import Any

import torch.utils.cpp_extension


def suffix_extension_names(suffix: str) -> None:
    """Unique extension names per kernel, so parallel builds of different kernels never collide."""

    def wrap(original: Any) -> Any:
        def loader(*args: Any, **kwargs: Any) -> Any:
            if "name" in kwargs:
                kwargs["name"] = f"{kwargs['name']}_{suffix}"
            elif args:
                args = (f"{args[0]}_{suffix}", *args[1:])
            return original(*args, **kwargs)

        loader.__wrapped__ = original  # type: ignore[attr-defined]
        return loader

    for attr in ("load_inline", "load"):
        setattr(torch.utils.cpp_extension, attr, wrap(getattr(torch.utils.cpp_extension, attr)))
