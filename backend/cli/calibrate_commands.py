"""`calibrate LABELS_FILE`: T_low, T_high, R_hitl from labelled queries, saved as a new policy version."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from backend.confidence.calibrate import CalibrationError, calibrate, check_row
from backend.confidence.policy import (
    POLICIES_DIR,
    Policy,
    PolicyError,
    available_versions,
    load_policy,
    save_new_policy,
    seed_formula_versions,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("calibrate", help="calibrate confidence thresholds from labelled queries (JSONL)")
    p.add_argument(
        "labels_file",
        metavar="LABELS_FILE",
        type=Path,
        help='one JSON object a line: {"query", "label": good|ambiguous|bad, '
        '"best_overall_score", "score_ratio"}',
    )
    p.add_argument(
        "--from-version",
        default=None,
        help="policy whose weights and rules are kept (default: the newest in --policies-dir, "
        "else the newest shipped one)",
    )
    p.add_argument(
        "--policies-dir",
        type=Path,
        default=POLICIES_DIR,
        help=f"where the new policy version is written (default: {POLICIES_DIR})",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="WEIGHT=VALUE",
        help="change a weight of the base policy in the new version (alpha, beta, w1, w2, w3): alpha=0.2",
    )
    p.add_argument(
        "--embedding-model",
        default=None,
        metavar="MODEL_ID",
        help="the embedding model whose searches scored the labels, recorded in the new policy so a "
        "service embedding with another one warns (default: the configured one, e.g. "
        "multilingual-e5-small@384, BAAI/bge-m3@1024)",
    )
    p.set_defaults(handler=run_calibrate)


_WEIGHTS = ("alpha", "beta", "w1", "w2", "w3")


def _with_weights(base: Policy, assignments: list[str]) -> Policy:
    from backend.cli.errors import CliError

    changes: dict[str, Any] = {}
    for item in assignments:
        name, _, value = item.partition("=")
        if name not in _WEIGHTS:
            raise CliError(f"--set {item!r}: the weights are {', '.join(_WEIGHTS)}")
        try:
            changes[name] = float(value)
        except ValueError:
            raise CliError(f"--set {item!r}: {value!r} is not a number") from None
    return dataclasses.replace(base, **changes) if changes else base


def run_calibrate(args: argparse.Namespace) -> int:
    """Read the labels, calibrate, write the next policy version and print what was decided."""
    from backend.cli.errors import CliError

    rows = read_labels(args.labels_file)
    try:
        base = _with_weights(_base_policy(args.from_version, args.policies_dir), args.set)
        policy, report = calibrate(rows, base)
    except (PolicyError, CalibrationError) as exc:
        raise CliError(str(exc)) from exc
    policy = dataclasses.replace(policy, embedding_model=args.embedding_model or _configured_model())
    path, saved = save_new_policy(policy, args.policies_dir)
    counts = report["counts"]
    print(
        f"calibrated on {report['rows']} labelled queries ({counts['good']} good, "
        f"{counts['ambiguous']} ambiguous, {counts['bad']} bad), from policy {base.version}"
    )
    print(f"T_low  = {report['T_low']:.4f}  ({report['method']['T_low']})")
    print(f"T_high = {report['T_high']:.4f}  ({report['method']['T_high']})")
    print(f"R_hitl = {report['R_hitl']:.4f}  ({report['method']['R_hitl']})")
    print(
        f"AUC    = {report['auc']:.4f}  ({report['method']['auc']}, {report['normalization']} normalisation)"
    )
    if report["normalization"] == "calibrated" and report["auc_per_query_normalisation"] is not None:
        print(
            "         per-query normalisation (seed 4.2) would give AUC "
            f"{report['auc_per_query_normalisation']:.4f}"
        )
    for warning in report["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    fitted = saved.embedding_model or "unknown (set --embedding-model or OPENAI_EMBEDDING_DIMS)"
    print(f"embedding model: {fitted}")
    print(f"new policy {saved.score_policy_version}: {path}")
    return 0


def _configured_model() -> str | None:
    from backend.config import get_settings
    from backend.embeddings.factory import configured_model_id

    return configured_model_id(get_settings())


def read_labels(path: Path) -> list[dict[str, Any]]:
    """The JSONL rows, each checked; an error names the line."""
    from backend.cli.errors import CliError

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise CliError(f"labels file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read labels file {path}: {exc}") from exc
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            check_row(row)
        except json.JSONDecodeError as exc:
            raise CliError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        except CalibrationError as exc:
            raise CliError(f"{path}:{number}: {exc}") from None
        rows.append(row)
    if not rows:
        raise CliError(f"{path} has no labelled rows")
    return rows


def _base_policy(version: str | None, directory: Path) -> Policy:
    """--from-version (default: the newest) looked up in --policies-dir, then among the shipped policies."""
    directories = list(dict.fromkeys([directory.resolve(), POLICIES_DIR]))
    for d in directories:
        versions = available_versions(d)
        seed_versions = seed_formula_versions(d)  # calibrate tunes the seed's formula only
        if seed_versions and version is None:
            return load_policy(seed_versions[-1], d)
        if version is not None and version.removeprefix("overall_") in versions:
            return load_policy(version, d)
    listed = "; ".join(f"{d}: {', '.join(available_versions(d)) or 'none'}" for d in directories)
    raise PolicyError(f"unknown score policy version {version!r}; available: {listed}")
