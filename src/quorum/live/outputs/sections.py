"""The sections of a live project's report (:mod:`quorum.live.outputs.report`), in page order:
each reads the status (and the spending events or label sources) and returns its HTML
body and figures."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from quorum.live.outputs.decisions import run_decision_lines
from quorum.live.outputs.figures import (
    confusion_figure,
    money_figure,
    people_figure,
    sources_figure,
)
from quorum.live.outputs.provenance import SOURCES, source_counts
from quorum.live.outputs.status import QUALITY_KEYS
from quorum.live.project.config import ProjectConfig
from quorum.pages.tables import Table, table_html

#: the page's sections: (id, title), in order
SECTIONS = (
    ("overview", "Where the run stands"),
    ("money", "Money over time"),
    ("sources", "Labels by source"),
    ("people", "The people"),
    ("models", "Models against the human labels"),
    ("tasks", "Human tasks"),
    ("decisions", "What the router decided"),
    ("quality", "Estimated accuracy"),
)
#: the section of tasks whose outputs are sets of labels, after "sources"
LABELS_SECTION = ("labels", "Each label")


# -- sections ---------------------------------------------------------------------------
def _html_section(key: str, body: list[str], figures: list[dict[str, str]] | None = None) -> dict:
    title = dict([*SECTIONS, LABELS_SECTION])[key]
    return {"id": key, "title": title, "body": "\n".join(body), "figures": figures or []}


def _p(text: str, cls: str = "") -> str:
    c = f" class='{cls}'" if cls else ""
    return f"<p{c}>{html.escape(text)}</p>"


def _dl(pairs: list[tuple[str, str]]) -> str:
    rows = "".join(
        f"<dt>{html.escape(k)}</dt><dd data-key='{html.escape(k)}'>{html.escape(v)}</dd>"
        for k, v in pairs
    )
    return f"<dl>{rows}</dl>"


def _table(title: str, header: list[str], rows: list[list[Any]], caption: str = "") -> str:
    return table_html(Table(title, header, [[_cell(v) for v in r] for r in rows], caption))


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def overview_section(cfg: ProjectConfig, st: dict[str, Any]) -> dict:
    last = st.get("last_run") or {}
    pairs = [
        ("Progress", st["line"] + ("" if st["labels_final"] else " (provisional)")),
        ("Items", str(st["items"])),
        ("Labelled", str(st["labelled"] or 0)),
        ("Budget", f"${st['budget']}"),
        ("Spent", f"${st['spent']}"),
        ("Left", f"${st['left']}"),
        ("Paid", f"${st['paid']}"),
        ("Held for pending humans", f"${st['held_for_humans']}"),
        ("Runs", str(st["runs"])),
    ]
    if last:
        pairs.append(
            (
                "Last run",
                f"#{last['run_id']} {last['status']}, method {last['method']}, seed {last['seed']}",
            )
        )
    if st["interrupted_calls"]:
        pairs.append(
            (
                "Interrupted calls",
                f"{st['interrupted_calls']} (possibly billed, at most "
                f"${st['interrupted_possibly_billed']})",
            )
        )
    calls = ", ".join(f"{k} {v}" for k, v in sorted(st["calls"].items())) or "none"
    pairs.append(("Calls", calls))
    return _html_section("overview", [_dl(pairs)])


def money_section(cfg: ProjectConfig, st: dict[str, Any], spending: pd.DataFrame) -> dict:
    per = st["per_annotator"]
    budget = float(st["budget"])
    rows = []
    for r in per.to_dict("records"):
        cost = float(r["cost"])
        rows.append(
            [
                r["annotator"],
                r["calls"],
                r["ok"],
                r["unparseable"],
                r["failed"],
                r["pending"],
                f"${r['cost']}",
                f"{100 * cost / budget:.1f}%" if budget > 0 else "",
            ]
        )
    rows.append(
        [
            "all",
            int(per["calls"].sum()) if len(per) else 0,
            "",
            "",
            "",
            "",
            f"${st['spent']}",
            f"{100 * float(st['spent']) / budget:.1f}%" if budget > 0 else "",
        ]
    )
    table = _table(
        "Spending by annotator",
        ["annotator", "calls", "ok", "unparseable", "failed", "pending", "cost", "of budget"],
        rows,
        "Cost counts paid calls (ok, unparseable, failed) and the price held for pending "
        "human tasks, as `spent` in `quorum status`.",
    )
    figs = []
    if len(spending):
        figs.append(
            {
                "name": "money",
                "caption": "Money committed over time, stacked by "
                "annotator (paid calls at their end, held human prices at their start); "
                "dashed: the budget.",
                "data": money_figure(spending, budget),
            }
        )
    body = [_p(f"Spent ${st['spent']} of ${st['budget']} (left ${st['left']})."), table]
    return _html_section("money", body, figs)


def sources_section(sources: pd.Series) -> dict:
    if not len(sources):
        return _html_section("sources", [_p("No labels yet: no routing pass has written any.")])
    counts = source_counts(sources)
    n = len(sources)
    rows = [[s, counts[s], f"{100 * counts[s] / n:.1f}%"] for s in SOURCES]
    table = _table(
        "Items by the source of their label",
        ["source", "items", "share"],
        rows,
        "**human vote**: the label of the human task (one person or the vote of k); "
        "**agreeing LLMs**: two or more machine annotators gave it; **one LLM**: a single "
        "one did; **label model**: no annotator gave it (the router's label model chose it).",
    )
    fig_ = {
        "name": "sources",
        "caption": "Items by the source of their label.",
        "data": sources_figure(counts),
    }
    return _html_section("sources", [table], [fig_])


def labels_section(cfg: ProjectConfig, st: dict[str, Any], frame: pd.DataFrame | None) -> dict:
    """Per label, for sets of labels: the items whose label holds it, the human votes
    holding it, how far the people agree about it (Krippendorff's alpha of the 0/1 answers)
    and each model's agreement with the human vote about it."""
    kind = cfg.task.kind
    per = st["agreement"].get("per_label") or []
    names = cfg.task.label_names or {}
    final: dict[str, int] = dict.fromkeys(kind.labels, 0)
    n = 0
    if frame is not None and len(frame):
        for v in frame["label"]:
            got = kind.label_set(v) if isinstance(v, str) else None
            if got is None:
                continue
            n += 1
            for lab in got:
                if lab in final:
                    final[lab] += 1
    rows = [
        [
            _label(p["label"], names), final.get(p["label"], 0),
            f"{100 * final.get(p['label'], 0) / n:.1f}%" if n else "",
            f"{p['human_votes']}/{p['votes']}" if p["votes"] else "", p["people_pairs"],
            p["people_agreement"], p["people_alpha"],
        ]
        for p in per
    ]  # fmt: skip
    body = [
        _p(f"{n} item(s) have a label set; an item counts for every label its set holds."),
        _table(
            "Labels: counts and the people's agreement",
            [
                "label",
                "items",
                "share",
                "human votes holding it",
                "pairs of people",
                "people agree",
                "alpha (people)",
            ],
            rows,
            "**items**: the labelled items whose set holds the label; **human votes**: the "
            "items' human votes holding it, of all human votes; **people agree**: the share "
            "of pairs of people's labels of one item that agree whether the label applies; "
            "**alpha**: Krippendorff's alpha of those 0/1 answers.",
        ),
    ]
    models = sorted({m for p in per for m in p["models"]})
    if models:
        body.append(
            _table(
                "Each model against the human vote, per label",
                ["label", *[f"{m}: agreement" for m in models], *[f"{m}: holding" for m in models]],
                [
                    [
                        _label(p["label"], names),
                        *[p["models"].get(m, {}).get("agreement") for m in models],
                        *[p["models"].get(m, {}).get("holding") for m in models],
                    ]
                    for p in per
                ],
                "**agreement**: the share of the items with a human vote and the model's "
                "answer where both agree whether the label applies; **holding**: the "
                "model's answers that hold the label.",
            )
        )
    return _html_section("labels", body)


def people_section(st: dict[str, Any]) -> dict:
    """The people: each person's labels, reliability and agreement, the pairs of people,
    Krippendorff's alpha among them and the human arm's quality."""
    ag = st["agreement"]["people"]
    team = {p["person"]: p for p in st.get("human_team") or []}
    persons = {p["person"]: p for p in ag["persons"]}
    names = sorted(set(team) | set(persons), key=str)
    if not names:
        return _html_section("people", [_p("No human label yet.")])
    rows = _person_rows(names, team, persons)
    measure = st["agreement"].get("measure") or "the same label"
    body = [
        _p(
            f"Krippendorff's alpha among the people: {_cell(ag['alpha']) or 'n/a'} over "
            f"{ag['items_with_2plus']} item(s) with two or more human labels "
            f"({ag['labels']} labels in all)."
            + ("" if measure == "the same label" else f" Agreement here is the {measure}.")
        )
    ]
    q = st.get("human_quality")
    if q is not None:
        body.append(_p(f"The human arm's estimated quality (for the router): {q:.3f}."))
    body.append(_person_table(rows, measure))
    if ag["pairs"]:
        body.append(
            _table(
                "Pairs of people",
                ["person", "person", "items both labelled", "agreement", "Cohen's kappa"],
                [[p["a"], p["b"], p["items"], p["agreement"], p["kappa"]] for p in ag["pairs"]],
            )
        )
    figs = []
    if rows:
        figs.append(
            {
                "name": "people",
                "caption": "Each person: reliability, agreement with the others and with the vote.",
                "data": people_figure(rows),
            }
        )
    return _html_section("people", body, figs)


def _person_rows(
    names: list[str], team: dict[str, dict[str, Any]], persons: dict[str, dict[str, Any]]
) -> list[list[Any]]:
    """One row a person: labels, reliability, checked, gold, agreement with the others
    and with the vote (``team``: the status's reliabilities, ``persons``: the agreement)."""
    rows = []
    for n in names:
        t, a = team.get(n, {}), persons.get(n, {})
        gold = f"{t['gold_correct']}/{t['gold']}" if t.get("gold") is not None else ""
        rows.append(
            [
                n,
                a.get("labels", t.get("labels")),
                t.get("accuracy"),
                t.get("checked"),
                gold,
                a.get("agree_with_others"),
                a.get("agreement_vote"),
            ]
        )
    return rows


def _person_table(rows: list[list[Any]], measure: str = "the same label") -> str:
    """The table of :func:`_person_rows`, with what its columns mean (``measure``: what
    agreement is, for graded answers such as span lists)."""
    if measure != "the same label":
        return _table(
            "Each person",
            ["person", "labels", "reliability", "checked", "gold right/of", "agree with others",
             "agree with the vote"],
            rows,
            f"**reliability**: the estimated accuracy (the {measure} of checked answers "
            "against gold, else against the other people's vote, shrunk to the prior; "
            f"docs/live.md); **agree with others**: the {measure} of the person's answers "
            f"with the other people's on the same items; **agree with the vote**: the "
            f"{measure} with the item's human vote.",
        )  # fmt: skip
    return _table(
        "Each person",
        [
            "person",
            "labels",
            "reliability",
            "checked",
            "gold right/of",
            "agree with others",
            "agree with the vote",
        ],
        rows,
        "**reliability**: the estimated accuracy (Dawid-Skene on checked labels, shrunk to the "
        "prior; docs/live.md); **agree with others**: the share of the other people's labels "
        "of the same items that are the same; **agree with the vote**: the share of the "
        "person's labels equal to the item's human vote.",
    )


def _judges_table(st: dict[str, Any]) -> list[str]:
    """Pairwise judges asked in both orders: each one's consistency and win rates (none
    where no judge was)."""
    rows = st.get("pair_judges") or []
    if not rows:
        return []
    header = ["judge", "rule", "pairs", "read in both orders", "consistent", "inconsistent",
              "output 1 wins", "first shown wins", "with an answer"]  # fmt: skip
    keys = ["judge", "rule", "pairs", "read_both", "consistent", "inconsistent", "wins_1",
            "picks_first_shown", "answered"]  # fmt: skip
    return [
        _table(
            "Pairwise judges asked in both orders",
            header,
            [[r[k] for k in keys] for r in rows],
            "**consistent**: the share of the pairs read in both orders whose two verdicts "
            "(the outputs as given, then exchanged) name the same output; **output 1 wins**: "
            "the share of the given-order verdicts read that are for output 1; **first shown "
            "wins**: the share of all "
            "verdicts for the output shown first (0.5: no position bias); **with an "
            "answer**: pairs the judge's swap_rule gave an answer (docs/live.md).",
        )
    ]


def models_section(cfg: ProjectConfig, st: dict[str, Any]) -> dict:
    ag = st["agreement"]
    models = [m for m in ag["models"] if m["items"]]
    judges = _judges_table(st)
    if not models:
        return _html_section(
            "models", [_p("No item has both a human vote and a model's answer yet."), *judges]
        )
    names = cfg.task.label_names or {}
    body = [
        _p(
            f"{ag['human_votes']} item(s) have a human vote. Krippendorff's alpha among "
            f"everyone (people and models): {_cell(ag['everyone']['alpha']) or 'n/a'}."
        ),
        _table(
            "Each model against the human vote",
            ["model", "answers", "items with a vote", "agreement", "Cohen's kappa"],
            [
                [m["annotator"], m["answers"], m["items"], m["agreement"], m["kappa"]]
                for m in models
            ],
        ),
    ]
    if not any(m["confusion"] for m in models):  # graded answers (span lists): no confusion
        measure = ag.get("measure") or "agreement"
        body.append(_p(f"Agreement here is the {measure} of the model's answer with the vote."))
        return _html_section("models", body)
    for m in models:
        labels = list(m["confusion"])
        rows = []
        for t in labels:
            row = m["confusion"][t]
            pc = m["per_class"][t]
            rows.append([_label(t, names), *[row[p] for p in labels], pc["items"], pc["agreement"]])
        body.append(
            _table(
                f"{m['annotator']}: confusion with the human vote",
                ["human vote \\ model", *[_label(p, names) for p in labels], "items", "agreement"],
                rows,
                "Rows: the human vote; columns: the model's answer; **agreement**: the "
                "share of the row the model got right.",
            )
        )
    return _html_section("models", [*body, *judges], [confusion_figure(models, names)])


def _label(x: str, names: dict[str, str]) -> str:
    return f"{x} ({names[x]})" if x in names and names[x] != x else x


def tasks_section(st: dict[str, Any]) -> dict:
    tasks = st["human_tasks"]
    order = ["pending", "answered", "expired", "withdrawn"]
    keys = order + sorted(k for k in tasks if k not in order)
    body = [
        _table(
            "Human tasks by status",
            ["status", "tasks"],
            [[k, tasks.get(k, 0)] for k in keys],
            "**pending**: waiting for an answer; **answered**: labelled; **expired**: no "
            "answer within `humans.timeout`; **withdrawn**: no pass needed it any more.",
        ),
    ]
    slots = st.get("human_labels") or {}
    if slots:
        body.append(
            _table(
                "Human labels by slot status",
                ["status", "labels"],
                [[k, v] for k, v in sorted(slots.items())],
            )
        )
    if st["pending_humans"]:
        shown = st["pending_humans"][:50]
        more = len(st["pending_humans"]) - len(shown)
        body.append(
            _p(
                f"Waiting in {st['queue']}: "
                + ", ".join(map(str, shown))
                + (f" and {more} more" if more else "")
            )
        )
    return _html_section("tasks", body)


def decisions_section(cfg: ProjectConfig, st: dict[str, Any]) -> dict:
    last = st.get("last_run") or {}
    lines = run_decision_lines(cfg, st)
    head = f"Method {last.get('method')}, seed {last.get('seed')}." if last else "No run yet."
    if not lines:
        lines = ["The router reported no decisions (a method that keeps none, or no run yet)."]
    items = "".join(f"<li>{html.escape(x)}</li>" for x in lines)
    return _html_section("decisions", [_p(head), f"<ul class='decisions'>{items}</ul>"])


def quality_section(st: dict[str, Any]) -> dict:
    q = st.get("quality") or st  # the status's ``quality`` object (or the keys at its top)
    est, lo, hi = (q.get(k) for k in QUALITY_KEYS)
    target = (st.get("target") or {}).get("message")
    if est is None:
        return _html_section(
            "quality",
            [
                _p(
                    "No estimate: this run has no estimated accuracy (no quality_estimate "
                    "in quorum status --json).",
                    "none",
                )
            ],
        )
    text = f"Estimated accuracy {float(est):.3f}"
    if lo is not None and hi is not None:
        text += f" (interval {float(lo):.3f} to {float(hi):.3f})"
    if q.get("quality_n_checks") is not None:
        text += f", from {q['quality_n_checks']} random human checks"
    body = [_p(text + ".", "estimate")]
    if target:
        body.append(_p(f"Quality target: {target}.", "target"))
    return _html_section("quality", body)
