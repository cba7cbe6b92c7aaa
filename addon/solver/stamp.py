"""Which compiled model made a state: every compile takes a ModelStamp, every state it makes records it,
and every step checks it, so a state is never stepped by another model (not even another compile of the
same mechanism, whose arrays may differ in size or order)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count

_NUMBERS = count(1)


@dataclass(frozen=True)
class ModelStamp:
    """Identity of one compiled model: its kind ('tree', 'maximal'), a number unique in the process, and its
    mechanism's name."""

    kind: str
    number: int
    mechanism: str

    def __str__(self) -> str:
        return f"{self.kind} model #{self.number} of mechanism {self.mechanism!r}"


def new_stamp(kind: str, mechanism: str) -> ModelStamp:
    """A stamp no other model in this process has."""
    return ModelStamp(kind, next(_NUMBERS), mechanism)


def check_state(model: ModelStamp, made_by: ModelStamp) -> None:
    """ValueError naming both models unless a state made by `made_by` belongs to the model stamped `model`."""
    if made_by is not model and made_by != model:
        raise ValueError(f"this state was made by {made_by}, not by {model}: a state steps only with the model "
                         "that made it")
