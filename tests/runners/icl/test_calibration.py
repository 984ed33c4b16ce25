"""Contextual calibration (Zhao et al. 2021): the arithmetic by hand, then a calibrated run of a tiny decoder."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.plan.hparams import ICLSettings
from seedscope.runners.icl import runner as icl
from seedscope.runners.icl.calibration import calibrate, content_free_probabilities, content_free_rows, softmax

SEEDS = FactorSeeds.tied(3)


def test_calibration_divides_by_the_content_free_bias_by_hand():
    # p = (0.8, 0.2), p_cf = (0.9, 0.1): p / p_cf = (0.889, 2.0) → (0.3077, 0.6923): the prediction flips
    np.testing.assert_allclose(calibrate(np.array([[0.8, 0.2]]), np.array([0.9, 0.1])), [[8 / 26, 18 / 26]], atol=1e-12)
    # a prompt's own content-free answer becomes uniform; three classes
    bias = np.array([0.5, 0.3, 0.2])
    np.testing.assert_allclose(calibrate(bias[None, :], bias), [[1 / 3] * 3])


def test_the_content_free_probabilities_are_the_mean_of_the_inputs_distributions():
    scores = np.log(np.array([[0.6, 0.4], [0.8, 0.2], [0.7, 0.3]]))  # three content-free inputs
    np.testing.assert_allclose(content_free_probabilities(scores), [0.7, 0.3])
    np.testing.assert_allclose(softmax(np.array([[0.0, -np.inf]])), [[1.0, 0.0]])


def test_content_free_rows_blank_every_text_field():
    tests = pd.DataFrame({"example_id": ["7"], "text": ["a premise"], "text_pair": ["a hypothesis"], "label": [1]})
    rows = content_free_rows(tests)
    assert rows["text"].tolist() == ["N/A", "[MASK]", ""] and rows["text_pair"].tolist() == ["N/A", "[MASK]", ""]
    single = content_free_rows(tests.assign(text_pair=None))
    assert single["text_pair"].isna().all()


def _spec(model, **hparams) -> RunSpec:
    return RunSpec("sst2", str(model), SEEDS, method="icl",
                   hparams={"shots": 1, "max_eval_examples": 12, "batch_size": 4, "prompt_format": "minimal", **hparams})


def test_a_calibrated_run_keeps_its_uncalibrated_predictions(tiny_llama, data_dir):
    plain = icl.run(_spec(tiny_llama), data_dir)
    calibrated = icl.run(_spec(tiny_llama, calibration="contextual"), data_dir)
    table = calibrated.predictions
    probabilities = table[["prob_negative", "prob_positive"]].to_numpy()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1)
    # the uncalibrated columns are the plain run's predictions (to float tolerance: the content-free rows share the
    # batches), and its metrics are kept as uncalibrated_*
    np.testing.assert_allclose(table[["uncalibrated_prob_negative", "uncalibrated_prob_positive"]].to_numpy(),
                               plain.predictions[["prob_negative", "prob_positive"]].to_numpy(), atol=1e-5)
    assert (table["uncalibrated_prediction"] == plain.predictions["prediction"]).all()
    assert calibrated.metrics["uncalibrated_accuracy"] == plain.metrics["accuracy"]
    # the calibrated probabilities are the plain ones divided by the recorded content-free bias
    bias = np.array(list(calibrated.environment["content_free_probabilities"].values()))
    expected = calibrate(plain.predictions[["prob_negative", "prob_positive"]].to_numpy(), bias)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    assert calibrated.environment["calibration"] == "contextual" and plain.environment["calibration"] == "none"


def test_calibration_is_refused_where_it_means_nothing(tiny_llama, data_dir):
    with pytest.raises(SeedscopeError, match="calibration rescales scored probabilities, so it needs predict: score"):
        ICLSettings.from_hparams({"calibration": "contextual", "predict": "generate"})
    with pytest.raises(SeedscopeError, match="copa's answers are each example's own choices"):
        icl.run(RunSpec("copa", str(tiny_llama), SEEDS, method="icl",
                        hparams={"shots": 1, "calibration": "contextual", "max_eval_examples": 4}), data_dir)
