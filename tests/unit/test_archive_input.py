"""WAL input as the backup tools store it, without the tools: the layouts and names of
``wal.archive``, compression told from content (``wal.compression``), pgBackRest's SHA-1 names.

The oracle is the same WAL read from plain files: every layout and compressor must give the same
records, and damaged input one error naming the file.  (tests/live/test_archives.py runs the real
tools: pgBackRest, barman, WAL-G's layout.)
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import shutil
from pathlib import Path

import pytest

from waldecode.errors import SegmentFileError, UsageError
from waldecode.wal.compression import decompress, detect
from waldecode.wal.segments import discover, scan
from waldecode.wal.storage import InputOptions
from waldecode.wal.xlogreader import XLogReader

from test_corrupt_input import three_segments


def _brotli(data: bytes) -> bytes:
    import brotli

    return brotli.compress(data, quality=1)


def _lz4(data: bytes) -> bytes:
    import lz4.frame

    return lz4.frame.compress(data)


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


COMPRESSORS = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "lz4": _lz4,
    "zstd": _zstd,
    "xz": lzma.compress,
    "lzma": lambda d: lzma.compress(d, format=lzma.FORMAT_ALONE),
    "brotli": _brotli,
}
EXT = {"gzip": "gz", "bzip2": "bz2", "lz4": "lz4", "zstd": "zst", "xz": "xz", "lzma": "lzma", "brotli": "br"}


def records(paths, **kw):
    reader = XLogReader(segments=discover(paths, options=InputOptions(**kw)))
    return [(r.lsn, r.end_lsn) for r in reader], reader.stop.reason if reader.stop else None


@pytest.fixture
def plain(tmp_path):
    d = tmp_path / "plain"
    d.mkdir()
    w = three_segments(d)
    return d, w, records([d])


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_every_compressor_is_told_from_content_and_decodes_as_plain(plain, tmp_path, kind):
    d, w, expected = plain
    for path in d.iterdir():
        data = path.read_bytes()
        packed = COMPRESSORS[kind](data)
        assert detect(packed[:16], EXT[kind] == "br" and "brotli" or None) == kind
        assert decompress(packed, path, len(data), "brotli" if kind == "brotli" else None) == data
    # WAL-G's names: <segment>.<ext>
    walg = tmp_path / "walg" / "wal_005"
    walg.mkdir(parents=True)
    for path in d.iterdir():
        (walg / f"{path.name}.{EXT[kind]}").write_bytes(COMPRESSORS[kind](path.read_bytes()))
    assert records([walg.parent]) == expected
    assert records([walg]) == expected


@pytest.mark.parametrize("kind", ["gzip", "bzip2"])
def test_barman_names_compressed_segments_without_an_extension(plain, tmp_path, kind):
    d, w, expected = plain
    wals = tmp_path / "barman" / "main" / "wals"
    for path in d.iterdir():
        leaf = wals / path.name[:16]
        leaf.mkdir(parents=True, exist_ok=True)
        (leaf / path.name).write_bytes(COMPRESSORS[kind](path.read_bytes()))
    (tmp_path / "barman" / "main" / "base").mkdir()
    for where in (wals.parent, wals, next(wals.iterdir())):
        assert records([where]) == expected


def _pgbackrest(tmp_path: Path, d: Path, stanza: str = "main", sysid: int | None = None, compress=gzip.compress,
                ext="gz") -> Path:
    """A pgBackRest repository's archive as 2.45 writes it (archive.info, <version>-<id>, leaf directories)."""
    repo = tmp_path / "repo"
    archive = repo / "archive" / stanza
    (repo / "backup" / stanza).mkdir(parents=True, exist_ok=True)
    seg = sorted(d.iterdir())[0]
    if sysid is None:
        from waldecode.wal.segments import identity_of

        sysid = identity_of(seg.read_bytes(), seg).xlp_sysid
    for path in d.iterdir():
        data = path.read_bytes()
        leaf = archive / "15-1" / path.name[:16]
        leaf.mkdir(parents=True, exist_ok=True)
        (leaf / f"{path.name}-{hashlib.sha1(data).hexdigest()}.{ext}").write_bytes(compress(data))
    (archive / "archive.info").write_text(
        "[backrest]\nbackrest-format=5\nbackrest-version=\"2.45\"\n\n"
        f"[db]\ndb-id=1\ndb-system-id={sysid}\ndb-version=\"15\"\n\n"
        f"[db:history]\n1={{\"db-id\":{sysid},\"db-version\":\"15\"}}\n")
    return repo


def test_pgbackrest_every_level_of_the_repository(plain, tmp_path):
    d, w, expected = plain
    repo = _pgbackrest(tmp_path, d)
    stanza = repo / "archive" / "main"
    leaf = stanza / "15-1" / "0000000100000000"
    for where in (repo, stanza, stanza / "15-1", leaf):
        assert records([where]) == expected
    assert records(sorted(leaf.iterdir())) == expected


def test_pgbackrest_two_stanzas_need_one_chosen(plain, tmp_path):
    d, w, expected = plain
    repo = _pgbackrest(tmp_path, d)
    _pgbackrest(tmp_path, d, stanza="other")
    with pytest.raises(UsageError, match=r"several stanzas \(main, other\): choose one with --stanza"):
        discover([repo])
    assert records([repo], stanza="other") == expected
    with pytest.raises(UsageError, match="has no stanza 'nope'"):
        discover([repo], options=InputOptions(stanza="nope"))


def test_pgbackrest_sha1_in_the_name_is_checked(plain, tmp_path):
    d, w, expected = plain
    repo = _pgbackrest(tmp_path, d)
    leaf = repo / "archive" / "main" / "15-1" / "0000000100000000"
    files = sorted(leaf.iterdir())
    # another segment's bytes under the second one's name: the right compression, the wrong SHA-1
    files[1].write_bytes(files[2].read_bytes())
    reader = XLogReader(segments=discover([repo]))
    with pytest.raises(SegmentFileError) as e:
        list(reader)
    assert "SHA-1" in str(e.value) and e.value.path == str(files[1])


def test_pgbackrest_archive_info_of_another_cluster_is_refused(plain, tmp_path):
    d, w, expected = plain
    repo = _pgbackrest(tmp_path, d, sysid=1234)
    with pytest.raises(SegmentFileError, match="archive.info gives 1234"):
        discover([repo])


def test_recursive_search_skips_labels_and_other_files(plain, tmp_path):
    d, w, expected = plain
    tree = tmp_path / "tree"
    for i, path in enumerate(sorted(d.iterdir())):
        sub = tree / f"level{i}" / "deeper"
        sub.mkdir(parents=True)
        shutil.copy(path, sub / path.name)
    (tree / "level0" / "000000010000000000000001.00000028.backup").write_text("START WAL LOCATION: 0/1000028\n")
    (tree / "README").write_text("not WAL")
    assert records([tree]) == expected
    # a glob catching them too: passed over as a directory search passes them over
    assert records(sorted(tree.rglob("*"))) == expected


def test_the_extension_is_only_a_hint(plain, tmp_path):
    d, w, expected = plain
    odd = tmp_path / "odd"
    odd.mkdir()
    for path in d.iterdir():
        # gzip content under .zst, plain content under .gz
        target = odd / (path.name + (".zst" if path.name.endswith("2") else ".gz"))
        data = path.read_bytes()
        target.write_bytes(gzip.compress(data) if target.suffix == ".zst" else data)
    assert records([odd]) == expected


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_a_cut_compressed_file_is_one_error_naming_it(plain, tmp_path, kind):
    d, w, expected = plain
    target = sorted(d.iterdir())[1]
    packed = COMPRESSORS[kind](target.read_bytes())
    cut = target.with_name(f"{target.name}.{EXT[kind]}")
    cut.write_bytes(packed[:len(packed) // 2])
    target.unlink()
    reader = XLogReader(segments=discover([d]))
    with pytest.raises(SegmentFileError) as e:
        list(reader)
    assert f"could not decompress the file ({kind})" in str(e.value) and e.value.path == str(cut)


def test_a_file_that_decompresses_past_a_segment_is_refused(tmp_path):
    big = gzip.compress(b"\0" * (2 << 20))
    with pytest.raises(SegmentFileError, match="decompresses \\(gzip\\) to more than .* damaged or not a WAL segment"):
        decompress(big, tmp_path / "x.gz", 1 << 20)


def test_messages_say_what_a_path_is(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SegmentFileError) as e:
        scan([empty])
    assert str(e.value) == f"no WAL segment files found in directory {empty}"
    with pytest.raises(SegmentFileError, match="no such file or directory: "):
        scan([tmp_path / "missing"])
