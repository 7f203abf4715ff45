"""Measure the static layer: `python -m evaluator.audit.measure [--corpus tests/audit/corpus] [--problems FILE]`.

`--scan DIR` instead prints what it flags in a folder of unlabelled kernels (real LLM-written ones). Prints (as
Markdown) precision/recall of our rules and of KernelGuard on the hack/legit corpus, and the false
positives of KernelGuard (default vs ModelNew-tuned) and of our rules on the KernelBench reference files renamed to
ModelNew. Pure Python: no Django, no database. The numbers feed benchmarks/results/audit.md.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from evaluator.audit.kernelguard_adapter import analyze_raw
from evaluator.audit.static_rules import audit_static, is_flagged

KG_FLAGGED = {"suspicious", "hacked"}  # KernelGuard classifications that reject or hold a submission


def _header(text: str) -> dict[str, str]:
    m = re.search(r"^# expect: static=(\S+) rules=(\S*) classes=(\S*)", text, re.M)
    return {"static": m.group(1), "rules": m.group(2), "classes": m.group(3)} if m else {}


def _kg_flag(result: dict) -> bool:
    return result.get("classification") in KG_FLAGGED


def corpus_table(corpus: Path) -> list[str]:
    rows = []
    counts: Counter[str] = Counter()
    for kind in ("hack", "legit"):
        for path in sorted((corpus / kind).glob("*.py")):
            text = path.read_text()
            meta = _header(text)
            own = audit_static(text, kernelguard=False)
            full = audit_static(text)
            kg_default = analyze_raw(text, tuned=False)
            kg_tuned = analyze_raw(text, tuned=True)
            static = meta.get("static") == "yes"
            if meta.get("static") == "label":
                continue  # policy labels (D1) are neither hacks nor legitimate kernels for these metrics
            marks = {
                "own": is_flagged(own),
                "full": is_flagged(full),
                "kg_default": _kg_flag(kg_default),
                "kg_tuned": _kg_flag(kg_tuned),
            }
            for name, hit in marks.items():
                counts[f"{kind}:{'static' if static or kind == 'legit' else 'semantic'}:{name}:{hit}"] += 1
            worst = max((f.severity for f in full), key=["info", "low", "medium", "high"].index, default="-")
            rows.append(
                f"| {kind} | {path.stem} | {meta.get('classes', '-') or '-'} | {'yes' if static else 'no'} | "
                f"{'Y' if marks['own'] else '-'} | {'Y' if marks['full'] else '-'} | "
                f"{kg_default['classification']} | {kg_tuned['classification']} | {worst} |"
            )
    lines = [
        "| set | file | classes | static target | own rules | own+KG | KG default | KG tuned | worst |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    n_hack = sum(v for k, v in counts.items() if k.startswith("hack:static:own:"))
    n_sem = sum(v for k, v in counts.items() if k.startswith("hack:semantic:own:"))
    n_legit = sum(v for k, v in counts.items() if k.startswith("legit:static:own:"))
    lines.append(
        "| detector | recall (static-target hacks) | recall (all hacks) | false positives (legit) | precision |"
    )
    lines.append("|---|---|---|---|---|")
    for name in ("own", "full", "kg_default", "kg_tuned"):
        tp = counts[f"hack:static:{name}:True"]
        tp_all = tp + counts[f"hack:semantic:{name}:True"]
        fp = counts[f"legit:static:{name}:True"]
        precision = tp_all / (tp_all + fp) if tp_all + fp else float("nan")
        lines.append(
            f"| {name} | {tp}/{n_hack} = {tp / n_hack:.2f} | {tp_all}/{n_hack + n_sem} = "
            f"{tp_all / (n_hack + n_sem):.2f} | {fp}/{n_legit} | {precision:.2f} |"
        )
    return lines


def reference_table(problems: Path) -> list[str]:
    started = time.perf_counter()
    n = 0
    kg_default: Counter[str] = Counter()
    kg_tuned: Counter[str] = Counter()
    kg_patterns: dict[str, Counter[str]] = {"default": Counter(), "tuned": Counter()}
    own: Counter[str] = Counter()
    for line in problems.read_text().splitlines():
        problem = json.loads(line)
        if not problem.get("core"):
            continue
        n += 1
        code = re.sub(r"\bclass Model\b", "class ModelNew", problem["source"])
        for label, counter, tuned in (("default", kg_default, False), ("tuned", kg_tuned, True)):
            result = analyze_raw(code, tuned=tuned)
            counter[result["classification"]] += 1
            for m in result["matched_patterns"]:
                kg_patterns[label][m["pattern"]] += 1
        for f in audit_static(code, problem["source"]):
            own[f"{f.rule} ({f.severity})"] += 1
    elapsed = time.perf_counter() - started
    return [
        f"Reference files: {n} (levels 1-3), each run through both KernelGuard configs and the full static layer "
        f"in {elapsed:.1f} s.",
        "",
        "| KernelGuard config | classifications | patterns hit (files) |",
        "|---|---|---|",
        f"| default (`custom_kernel` entry point) | {dict(kg_default)} | {dict(kg_patterns['default'])} |",
        f"| tuned for ModelNew | {dict(kg_tuned)} | {dict(kg_patterns['tuned'])} |",
        "",
        "Our static layer (own rules + tuned KernelGuard) on the same files, findings by rule and severity:",
        "",
        *(f"- `{rule}`: {count}" for rule, count in own.most_common()),
        "",
    ]


def extra_table(folder: Path) -> list[str]:
    """Flag rate on another corpus laid out as exploits/*.py and legit/*.py (e.g. tests/redteam)."""
    lines = [
        f"Corpus `{folder}`:",
        "",
        "| set | files | flagged (own+KG) | flagged (KG tuned) | not flagged |",
        "|---|---|---|---|---|",
    ]
    for kind in ("exploits", "legit"):
        paths = sorted((folder / kind).glob("*.py"))
        ours = [p for p in paths if is_flagged(audit_static(p.read_text()))]
        kg = [p for p in paths if _kg_flag(analyze_raw(p.read_text(), tuned=True))]
        missed = ", ".join(p.stem for p in paths if p not in ours) or "-"
        lines.append(f"| {kind} | {len(paths)} | {len(ours)} | {len(kg)} | {missed} |")
    return [*lines, ""]


def scan_table(folder: Path) -> list[str]:
    """Unlabelled kernels (e.g. real LLM-written ones from public repositories, every *.py under `folder`): how
    many the static layer flags and by which rules, each flagged file named for a reader to judge."""
    paths = sorted(folder.rglob("*.py"))
    flagged: dict[Path, list[str]] = {}
    rules: Counter[str] = Counter()
    for path in paths:
        findings = audit_static(path.read_text(errors="replace"))
        if is_flagged(findings):
            named = sorted({f"{f.rule} ({f.severity})" for f in findings if f.severity in {"medium", "high"}})
            flagged[path] = named
            rules.update(named)
    return [
        f"Folder `{folder}`: {len(paths)} files, {len(flagged)} flagged by the static layer.",
        "",
        *(f"- `{rule}`: {count} files" for rule, count in rules.most_common()),
        "",
        *(f"- {path.relative_to(folder)}: {', '.join(named)}" for path, named in flagged.items()),
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=Path("tests/audit/corpus"))
    parser.add_argument("--problems", type=Path, default=Path("leaderboard/data/kernelbench/problems.jsonl"))
    parser.add_argument("--extra", type=Path, nargs="*", default=[], help="more folders with exploits/ and legit/")
    parser.add_argument("--scan", type=Path, nargs="*", default=[], help="folders of unlabelled kernels (*.py)")
    args = parser.parse_args()
    for folder in args.scan:
        print("\n".join(scan_table(folder)))
    if args.scan:
        return
    print("\n".join(corpus_table(args.corpus)))
    for folder in args.extra:
        print("\n".join(extra_table(folder)))
    if args.problems.exists():
        print("\n".join(reference_table(args.problems)))


if __name__ == "__main__":
    main()
