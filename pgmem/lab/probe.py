"""The injection probe: ``pgmem eval probe`` trains it and writes its SQL.

Rules (``pgmem.safety_rules()``) match the phrasings they were written for; an
attack worded another way, or in another language, slips past them. The probe reads
what a text *means*: a logistic regression on the text's own embedding (the vector
the write path stores anyway), one per embedding model, whose weights the database
holds as constants (``pgmem._injection_probe``, ``sql/functions/05_safety_probe.sql``,
written by :func:`render_sql`). ``pgmem.remember`` and ``remember_many`` reject a text
whose probe score reaches the model's cut-off as they reject one a rule matches
(``pgmem._detect_injection_probe``).

Training set: every case of the development corpus (``pgmem/safety_corpus.jsonl``;
injections are the positives, everything else negatives) and everyday dialogue as
negatives: the turns of the LoCoMo file given and of the Chinese set
(``pgmem/lab/data/zh_personas.json``). Look-alikes weigh :data:`LOOKALIKE_WEIGHT`
and everyday turns :data:`EVERYDAY_WEIGHT` against an injection's 1, so the rare
harmless text that talks about rules or instructions counts as much as it must.

The cut-off is chosen out of sample: five-fold cross-validation over the training set
(fixed folds), the lowest probability whose out-of-fold false positives stay within
:data:`MAX_LOOKALIKE_FP` of the look-alikes and :data:`MAX_EVERYDAY_FP` of the
everyday turns. The figures of that choice are reported and written into the SQL
file's header; the frozen and held-out corpora (``pgmem eval safety``) are never
trained on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pgmem.embed import Embedder
from pgmem.extract.safety import CJK
from pgmem.lab import eval as ev
from pgmem.queries import safety as Q
from pgmem.safety_eval import CORPUS, Case, load_corpus

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CHINESE_SET",
    "MIN_LENGTH",
    "SQL_FILE",
    "Probe",
    "fit",
    "probe_length",
    "render_sql",
    "train",
]

SQL_FILE: Final = Path(__file__).resolve().parents[2] / "sql" / "functions" / "05_safety_probe.sql"
CHINESE_SET: Final = Path(__file__).with_name("data") / "zh_personas.json"

# The L2 penalty's inverse: e5 and MiniLM vectors are unit length with components of
# ~0.05, so the weights that separate injections must be large; 1,000 gave the best
# out-of-fold recall at the false-positive bounds below among 30-10,000.
C: Final = 1000.0
LOOKALIKE_WEIGHT: Final = 3.0
EVERYDAY_WEIGHT: Final = 3.0
MAX_LOOKALIKE_FP: Final = 0.0075
MAX_EVERYDAY_FP: Final = 0.0005
# The probe reads a text of at least this length, counting a CJK character as four
# (about eight words either way): on shorter ones its false positives fall on the
# user's own short standing instructions ("回答的时候先给结论", "no jargon"), while on the
# development corpus only one injection the rules miss is shorter. Rules read every
# text; pgmem._probe_length is this measure in SQL.
MIN_LENGTH: Final = 40
# Cut-offs tried, as probabilities; the lowest one within both bounds is taken.
CUTOFFS: Final = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99)
FOLDS: Final = 5
SEED: Final = 20261207


@dataclass(frozen=True)
class Probe:
    """One embedding model's probe and what cross-validation measured of it."""

    model: str
    weights: list[float]
    bias: float
    cutoff: float | None  # probability; None: no cut-off kept within the bounds
    cases: int  # corpus cases trained on
    everyday: int  # everyday turns trained on
    recall: float  # out of fold, injections of the corpus
    lookalike_fp: float  # out of fold, the corpus's harmless cases
    everyday_fp: float  # out of fold, everyday turns

    @property
    def logit_cutoff(self) -> float:
        assert self.cutoff is not None
        return math.log(self.cutoff / (1 - self.cutoff))

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "dims": len(self.weights),
            "cutoff": self.cutoff,
            "cases": self.cases,
            "everyday": self.everyday,
            "recall": self.recall,
            "lookalike_fp": self.lookalike_fp,
            "everyday_fp": self.everyday_fp,
        }


def fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray, c: float = C) -> np.ndarray:
    """Weighted L2 logistic regression by Newton's method: the coefficients, the
    intercept last (not penalised). Deterministic, so a retrain gives the same file."""
    import numpy as np

    a = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(a.shape[1])
    penalty = np.eye(a.shape[1]) / c
    penalty[-1, -1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(a @ beta)))
        gradient = a.T @ (weights * (p - y)) + penalty @ beta
        hessian = (a * (weights * p * (1 - p))[:, None]).T @ a + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.abs(step).max()) < 1e-9:
            break
    return beta


def everyday_turns(locomo: Path | str) -> list[str]:
    """The text of every turn of a LoCoMo file and of the Chinese set."""
    return [
        turn.text
        for path in (locomo, CHINESE_SET)
        for conversation in ev.load_locomo(path)
        for session in conversation.sessions
        for turn in session.turns
        if turn.text.strip()
    ]


def probe_length(text: str) -> int:
    """A text's length as the probe's gate measures it: characters, a CJK one as four."""
    return len(text) + 3 * len(CJK.findall(text))


def _score(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    result: np.ndarray = x @ beta[:-1] + beta[-1]
    return result


def train(
    embedder: Embedder,
    everyday: Sequence[str],
    cases: Sequence[Case] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Probe:
    """The probe of ``embedder``'s model, trained on ``cases`` (the development corpus)
    and the ``everyday`` turns, its cut-off chosen by cross-validation."""
    import numpy as np

    say = progress or (lambda _message: None)
    cases = load_corpus(CORPUS) if cases is None else cases
    say(f"{embedder.model}: embedding {len(cases)} corpus cases and {len(everyday)} turns")
    texts = [c.text for c in cases] + list(everyday)
    x = np.asarray(embedder.embed(texts), dtype=np.float64)
    read = np.array([probe_length(t) >= MIN_LENGTH for t in texts])
    y = np.array([c.set == "injection" for c in cases] + [False] * len(everyday), dtype=np.float64)
    lookalike = np.array([c.set != "injection" for c in cases] + [False] * len(everyday))
    turn = np.array([False] * len(cases) + [True] * len(everyday))
    weights = np.where(y > 0, 1.0, np.where(turn, EVERYDAY_WEIGHT, LOOKALIKE_WEIGHT))
    weights *= len(weights) / weights.sum()

    say(f"{embedder.model}: {FOLDS}-fold cross-validation")
    folds = np.random.default_rng(SEED).integers(0, FOLDS, len(x))
    scores = np.zeros(len(x))
    for k in range(FOLDS):
        beta = fit(x[folds != k], y[folds != k], weights[folds != k])
        scores[folds == k] = _score(beta, x[folds == k])
    chosen: float | None = None
    for cutoff in CUTOFFS:
        flagged = read & (scores >= math.log(cutoff / (1 - cutoff)))
        if (
            flagged[lookalike].mean() <= MAX_LOOKALIKE_FP
            and flagged[turn].mean() <= MAX_EVERYDAY_FP
        ):
            chosen = cutoff
            break
    # The figures at the cut-off kept, else at the strictest one tried.
    strictest = CUTOFFS[-1] if chosen is None else chosen
    flagged = read & (scores >= math.log(strictest / (1 - strictest)))
    say(f"{embedder.model}: fitting on everything")
    beta = fit(x, y, weights)
    return Probe(
        model=embedder.model,
        weights=[float(v) for v in beta[:-1]],
        bias=float(beta[-1]),
        cutoff=chosen,
        cases=len(cases),
        everyday=len(everyday),
        recall=float(flagged[y > 0].mean()),
        lookalike_fp=float(flagged[lookalike].mean()),
        everyday_fp=float(flagged[turn].mean()),
    )


COMMENT: Final = (
    "The injection probe of an embedding model (no row: none): weights and intercept of a "
    "logistic regression on a text''s embedding, the logit at or above which the text is "
    "an injection, and the least pgmem._probe_length of a text it reads (internal; written "
    "by `pgmem eval probe`, read by pgmem._detect_injection_probe)."
)


def render_sql(probes: Sequence[Probe]) -> str:
    """``sql/functions/05_safety_probe.sql``: ``pgmem._injection_probe`` holding each
    probe's weights, intercept and cut-off (as a logit) as constants. A model whose
    probe kept no cut-off within the bounds gets no probe: its texts meet the rules
    alone."""
    header = [
        "-- Written by `pgmem eval probe` (pgmem/lab/probe.py): do not edit by hand.",
        "-- The injection probe of each embedding model: a logistic regression on a",
        "-- text's embedding, trained on pgmem/safety_corpus.jsonl and everyday",
        "-- dialogue, its cut-off chosen by five-fold cross-validation; it reads texts",
        f"-- of {MIN_LENGTH} characters or more, a CJK one counting as four:",
    ]
    for p in probes:
        header.append(
            f"--   {p.model}: "
            + (
                f"cut-off {p.cutoff:g}"
                if p.cutoff is not None
                else f"none (no cut-off within the bounds; at {CUTOFFS[-1]:g})"
            )
            + f"; out of fold, injections caught {p.recall:.1%}, look-alikes flagged "
            f"{p.lookalike_fp:.2%}, everyday turns flagged {p.everyday_fp:.3%} "
            f"({p.cases} cases, {p.everyday} turns)."
        )
    rows = ",\n".join(
        f"        ('{p.model}',\n         '[{','.join(f'{w:.6g}' for w in p.weights)}]',\n"
        f"         {p.bias:.9g}, {p.logit_cutoff:.9g}, {MIN_LENGTH})"
        for p in probes
        if p.cutoff is not None
    )
    body = Q.INJECTION_PROBE_FUNCTION.format(
        probed=Q.INJECTION_PROBE_ROWS.format(rows=rows) if rows else Q.NO_INJECTION_PROBE,
        comment=COMMENT,
    )
    return "\n".join(header) + "\n" + body
