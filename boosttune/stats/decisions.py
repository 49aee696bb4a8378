"""The vocabulary of a decision, in one place: its codes and every wording of them.

Two kinds of code reach a page: the race's exits (:class:`Exit`, why a candidate left the race, which is the
decision: ``verdict`` and ``race_exit`` in summary.csv) and a paired test's verdicts (:class:`VerdictCode`, the
fixed rounds of an older folder). The summary, the terminal, the report, the method cards and the reference all
take their words from here, so one decision reads the same everywhere. Pure: no pandas, no Ray.
"""

from __future__ import annotations

from boosttune.objective import ACCURACY, Objective

__all__ = ["DROPPED", "SHORT", "Exit", "VerdictCode", "card_words", "decision_words"]


class Exit:
    """Why a candidate left the race (``race_exit`` in summary.csv)."""

    RACING = "racing"
    WON = "won"  # shown faster and non-inferior
    SLOWER = "slower"
    TOO_LOSSY = "too_lossy"
    BEHIND = "behind"  # likely not faster than a winner by more than a tie: cannot be the answer
    UNDECIDED = "undecided"  # max_seeds reached
    BUDGET = "budget"  # the budget could not pay for another round
    FUTILE = "futile"  # under 10% likely to be shown by the last look the budget and the seed cap leave it

    # a drop claims nothing (it stops spending on a recipe at a laxer, one-sided 90% bound): "likely", not "shown"
    TEXT = {RACING: "still racing", WON: "shown faster and non-inferior", SLOWER: "dropped: likely slower than the baseline",
            TOO_LOSSY: "dropped: likely beyond the margin",
            BEHIND: "dropped: likely not more than a tie faster than a winner, so it cannot be the answer",
            UNDECIDED: "undecided at the seed cap", BUDGET: "undecided when the budget ran out",
            FUTILE: "stopped: it cannot be decided within what the budget and the seed cap leave"}


class VerdictCode:
    """A paired test's verdict at one look (fixed rounds): ``Verdict.code``, and the ``verdict`` of a summary.csv
    written before the race decided."""

    FASTER = "faster"  # faster, objective within max_drop shown
    FASTER_CONSISTENT = "faster_noninferiority_consistent"  # faster, within max_drop on average, not shown
    FASTER_TOO_LOSSY = "faster_too_lossy"  # faster, but loses more than max_drop
    SLOWER = "slower"
    NOT_FASTER = "not_faster"  # speed not separable from the baseline's
    INCONCLUSIVE = "inconclusive"  # fewer than 2 paired seeds
    BASELINE = "baseline"  # the baseline's own row
    NO_DATA = "no_data"  # no round where both the recipe and the baseline finished


# A decision in the terminal's table: a few words.
SHORT = {Exit.WON: "won: faster, within the margin", Exit.SLOWER: "dropped: slower",
         Exit.TOO_LOSSY: "dropped: too lossy", Exit.BEHIND: "dropped: behind a winner",
         Exit.UNDECIDED: "undecided (seed cap)", Exit.BUDGET: "undecided (budget ran out)",
         Exit.FUTILE: "undecided (futile)", Exit.RACING: "undecided (stopped)",
         VerdictCode.BASELINE: "the baseline", VerdictCode.NO_DATA: "no data"}

# Why a preset's claim does not hold here when the race dropped it (the claims table never contradicts the race).
DROPPED = {Exit.SLOWER: "the confirm stage dropped it as likely slower than the baseline",
           Exit.BEHIND: "the confirm stage dropped it as likely not more than a tie faster than the recipe that won"}

# A fixed-round verdict in words; "accuracy" becomes the objective's noun.
_TESTED = {
    VerdictCode.FASTER: "faster, and accuracy within the margin is shown",
    VerdictCode.FASTER_CONSISTENT: "faster; the accuracy is within the margin on average, not yet shown",
    VerdictCode.FASTER_TOO_LOSSY: "faster, but loses more accuracy than the margin allows",
    VerdictCode.SLOWER: "slower than O0",
    VerdictCode.NOT_FASTER: "not shown faster than O0",
    VerdictCode.INCONCLUSIVE: "too few seeds to judge",
}


def decision_words(code: str, objective: Objective = ACCURACY, max_drop: float | None = None) -> str:
    """A decision (a race exit) or a paired test's verdict in a sentence's words, naming the objective and, when
    given, the margin; an unknown code as itself."""
    margin = f"{max_drop:.3g} {objective.unit}" if max_drop is not None else "the margin"
    raced = {Exit.WON: f"shown faster, and {objective.noun} within {margin} of the baseline's shown",
             Exit.SLOWER: "dropped: likely slower than the baseline",
             Exit.TOO_LOSSY: f"dropped: likely loses more {objective.noun} than {margin}",
             Exit.BEHIND: "dropped: likely not more than a tie faster than a recipe that won, so it cannot be the answer",
             Exit.UNDECIDED: "not decided at the seed cap",
             Exit.BUDGET: "not decided: the budget ran out",
             Exit.FUTILE: "not decided: stopped, it could not be decided within the budget and the seed cap",
             Exit.RACING: "not decided: the race was stopped",
             VerdictCode.BASELINE: "the baseline itself",
             VerdictCode.NO_DATA: "no paired run finished"}
    if code in raced:
        return raced[code]
    words = _TESTED.get(code, code)
    return words if objective == ACCURACY else words.replace("accuracy", objective.noun)


def card_words(code: str, objective: Objective, max_drop: float) -> str:
    """A method card's verdict on one measured recipe ("helped here", ...), for a decision or a test's verdict."""
    if code in (VerdictCode.FASTER, Exit.WON):
        return "helped here"
    if code == VerdictCode.FASTER_CONSISTENT:
        return f"helped here ({objective.noun} within the margin on average, not shown)"
    if code in (VerdictCode.FASTER_TOO_LOSSY, Exit.TOO_LOSSY):
        return f"lost more than {max_drop:.3g} {objective.unit} here"
    if code in (VerdictCode.SLOWER, Exit.SLOWER):
        return "did not help here: slower than O0"
    if code in (VerdictCode.INCONCLUSIVE, VerdictCode.NO_DATA):
        return "not judged: fewer than 2 paired seeds"
    if code in (Exit.UNDECIDED, Exit.BUDGET, Exit.FUTILE, Exit.RACING):
        return "not decided here on these seeds"
    return "did not help here: no speed-up separable from noise"
