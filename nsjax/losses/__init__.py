"""Losses as functions of the scores S = X w (see `nsjax.losses.base`)."""

from nsjax.losses.chain import ChainHinge
from nsjax.losses.f1 import F1Loss
from nsjax.losses.hinge import Hinge
from nsjax.losses.logistic import Logistic
from nsjax.losses.max_affine import MaxAffine
from nsjax.losses.max_score import MaxScore
from nsjax.losses.multiclass_hinge import MulticlassHinge
from nsjax.losses.multilabel_hinge import MultilabelHinge
from nsjax.losses.squared import Squared

__all__ = ["ChainHinge", "F1Loss", "Hinge", "Logistic", "MaxAffine", "MaxScore", "MulticlassHinge",
           "MultilabelHinge", "Squared"]
