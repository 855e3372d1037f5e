"""Every routing method on sentimp-en (human = gold), both settings, 10 seeds: a Markdown table.

Usage: python scripts/sentimp_all_methods.py
"""

import numpy as np

from quorum.simulate import prepare, simulate_once

P = prepare("sentimp-en")
methods = ["random", "coannotating", "cdi", "hypac", "araida", "sant", "quorum"]
print("| setting | budget | " + " | ".join(methods) + " |")
print("|---|---|" + "---|" * len(methods))
over = 0
for setting in ("auditor", "dollars"):
    for b in (0.1, 0.3, 0.5, 0.7):
        cells = []
        for m in methods:
            rows = [simulate_once(P, m, setting, b, s)[0] for s in range(10)]
            over += sum(r["cost"] > r["budget_limit"] + 1e-9 for r in rows)
            acc = np.array([r["accuracy"] for r in rows])
            cost = np.mean([r["cost"] for r in rows])
            cells.append(f"{acc.mean():.3f} ± {acc.std():.3f} (${cost:.1f})")
        print(f"| {setting} | {int(b * 100)}% | " + " | ".join(cells) + " |")
print(f"\nruns over budget: {over}")
