"""Versioned policy files (score policies, rerank policies): v1, v2, ... one JSON object per file in a
directory, listed oldest first and read with the error a caller can act on. The one loader both kinds
use; each kind parses the object into its own type."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERSION = re.compile(r"^v([1-9][0-9]*)$")


@dataclass(frozen=True)
class PolicyFiles:
    """One kind of policy: its file name pattern, the prefix a version may carry, its error."""

    kind: str  # for messages: "score policy version", "rerank policy"
    file: str  # "{}.json", "rerank_{}.json"
    prefix: str  # "overall_", "rerank_": stripped from a version name
    error: type[ValueError]

    def versions(self, directory: Path) -> list[str]:
        """The versions in `directory`, oldest first."""
        before, after = self.file.split("{}")
        found = [
            p.name.removeprefix(before).removesuffix(after)
            for p in Path(directory).glob(self.file.format("v*"))
        ]
        return sorted((v for v in found if VERSION.match(v)), key=lambda v: int(v[1:]))

    def read(self, version: str, directory: Path) -> tuple[Path, str, dict[str, Any]]:
        """(path, bare version, the parsed object) of one file; `version` is 'v2' or prefix + 'v2'."""
        name = version.strip().removeprefix(self.prefix)
        path = Path(directory) / self.file.format(name)
        if not VERSION.match(name) or not path.is_file():
            listed = ", ".join(self.versions(directory)) or "none"
            raise self.error(f"unknown {self.kind} {version!r} in {directory}; available: {listed}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise self.error(f"{path} is not readable JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise self.error(f"{path} must hold a JSON object")
        return path, name, data

    def check_version(self, path: Path, declared: str, name: str) -> None:
        """A file declares the version its name says."""
        if declared != name:
            raise self.error(f"{path} declares version {declared!r}; the file name says {name!r}")
