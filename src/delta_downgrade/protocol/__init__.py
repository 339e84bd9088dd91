"""The Delta protocol as code: table features and the protocol algebra. No I/O here."""

from delta_downgrade.protocol.features import (
    CHECKPOINT_PROTECTION,
    FEATURES,
    FeatureKind,
    TableFeature,
    lookup_feature,
)
from delta_downgrade.protocol.protocol import Protocol

__all__ = ["CHECKPOINT_PROTECTION", "FEATURES", "FeatureKind", "Protocol", "TableFeature", "lookup_feature"]
