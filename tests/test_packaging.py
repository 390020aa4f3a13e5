"""pyproject.toml as packaging tools read it: no deprecated forms (an install prints no warning about
them), and the extras the Makefile installs."""

from __future__ import annotations

import tomllib

from tests.conftest import ROOT


def test_the_license_is_an_spdx_string() -> None:
    """A table (`{ text = … }`) makes setuptools print a deprecation warning on every install."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"]  # the first to read SPDX strings


def test_the_bench_extra_draws_the_charts() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(name.startswith("matplotlib") for name in project["project"]["optional-dependencies"]["bench"])
