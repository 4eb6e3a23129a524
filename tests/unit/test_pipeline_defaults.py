"""`ge-sim --hw NAME --pipeline ge-compile` compiles for the preset it simulates
(pipeline defaults fill options the pipeline text does not give)."""

from __future__ import annotations

import os

from gecomp.core.passes import parse_pass_pipeline
from gecomp.tools import ge_sim

MLP = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "mlp.mlir")


def test_defaults_fill_only_options_not_given():
    assert parse_pass_pipeline("ge-compile", {"hw": "tiny"})[0].hw == "tiny"
    assert parse_pass_pipeline("ge-compile{hw=ascend910}", {"hw": "tiny"})[0].hw == "ascend910"
    assert parse_pass_pipeline("cse", {"hw": "tiny"})[0].name == "cse"  # passes without the option are untouched


def test_ge_sim_compiles_for_the_simulated_preset(capsys):
    assert ge_sim.main([MLP, "--pipeline", "ge-compile", "--hw", "tiny", "--check"]) == 0
    assert "check: ok" in capsys.readouterr().out
