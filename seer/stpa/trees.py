"""Gradient-boosted trees evaluated in numpy from xgboost's JSON model file.

``threads="auto"`` must work where xgboost is not installed (the offline bundle carries no
xgboost): training writes the booster with ``Booster.save_model("....json")`` and inference
walks those trees here. Semantics are xgboost's for numeric splits: inputs as float32, go
left when ``x < split_condition``, a missing (NaN) input follows ``default_left``, and the
prediction is ``base_score`` plus the sum of one leaf per tree (``reg:squarederror``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from seer.errors import ModelError

__all__ = ["TreeEnsemble"]


class TreeEnsemble:
    """The trees of one xgboost regression model (see the module docstring)."""

    def __init__(self, model: dict) -> None:
        self.model = model  # what save writes back
        learner = model["learner"]
        objective = learner["objective"]["name"]
        if objective != "reg:squarederror":
            raise ModelError(f"TreeEnsemble: objective {objective!r} is not supported "
                             "(reg:squarederror only)")
        self.base_score = float(learner["learner_model_param"]["base_score"].strip("[]"))
        self.n_features = int(learner["learner_model_param"]["num_feature"])
        self.trees = []
        for tree in learner["gradient_booster"]["model"]["trees"]:
            if any(tree["split_type"]):
                raise ModelError("TreeEnsemble: categorical splits are not supported")
            self.trees.append((np.array(tree["left_children"], np.int64),
                               np.array(tree["right_children"], np.int64),
                               np.array(tree["split_indices"], np.int64),
                               np.array(tree["split_conditions"], np.float32),
                               np.array(tree["default_left"], bool)))

    @classmethod
    def load(cls, path: Path) -> TreeEnsemble:
        return cls(json.loads(Path(path).read_text()))

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.model))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predictions for the rows of ``x`` (``(n, n_features)``)."""
        x = np.asarray(x, np.float32)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ModelError(f"TreeEnsemble: inputs of shape {x.shape}, the model takes "
                             f"(n, {self.n_features})")
        rows = np.arange(len(x))
        total = np.zeros(len(x), np.float32)
        for left, right, feature, cond, default_left in self.trees:
            node = np.zeros(len(x), np.int64)
            while True:
                inner = left[node] >= 0
                if not inner.any():
                    break
                value = x[rows, feature[node]]
                go_left = np.where(np.isnan(value), default_left[node], value < cond[node])
                node = np.where(inner, np.where(go_left, left[node], right[node]), node)
            total += cond[node]  # a leaf's split_condition holds its value
        return (total + np.float32(self.base_score)).astype(np.float64)
