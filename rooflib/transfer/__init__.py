"""Transfer model: one message between two GPUs by copy engine, TMA, register ld/st or multimem."""

from rooflib.transfer.choose import MechanismChoice, TransferResult, best_mechanism, predict_transfer
from rooflib.transfer.model import (
    CAPABILITIES,
    MECHANISMS,
    NETWORK_MECHANISMS,
    Capability,
    Mechanism,
    Reduction,
    available_mechanisms,
    mechanism_rate,
    saturating_sms,
    transfer_time,
)

__all__ = [
    "CAPABILITIES",
    "MECHANISMS",
    "NETWORK_MECHANISMS",
    "Capability",
    "Mechanism",
    "MechanismChoice",
    "Reduction",
    "TransferResult",
    "available_mechanisms",
    "best_mechanism",
    "mechanism_rate",
    "predict_transfer",
    "saturating_sms",
    "transfer_time",
]
