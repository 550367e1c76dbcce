"""``spark.pydaemon``: the workers' path loses Spark's zips of pyspark and py4j only when both packages are
installed elsewhere on it (what a task imports is then the same package, with its cached bytecode)."""

from __future__ import annotations

from waldecode.spark.pydaemon import _without_spark_zips


def _package(root, name):
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")


def test_zips_leave_the_path_when_both_packages_are_installed(tmp_path):
    site = tmp_path / "site-packages"
    _package(site, "pyspark")
    _package(site, "py4j")
    path = [str(tmp_path / "lib/pyspark.zip"), str(tmp_path / "lib/py4j-0.10.9.9-src.zip"), str(site), "/other.zip"]
    assert _without_spark_zips(path) == [str(site), "/other.zip"]


def test_path_kept_when_a_package_is_only_in_the_zips(tmp_path):
    site = tmp_path / "site-packages"
    _package(site, "pyspark")  # no py4j outside its zip
    path = [str(tmp_path / "lib/pyspark.zip"), str(tmp_path / "lib/py4j-0.10.9.9-src.zip"), str(site)]
    assert _without_spark_zips(path) is path


def test_path_without_zips_unchanged(tmp_path):
    path = [str(tmp_path)]
    assert _without_spark_zips(path) is path
