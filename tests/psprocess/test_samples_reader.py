"""The <sample>s of a raw profile read in C (native_rows.samples, used by
readers/document.py) give the {pc: count} tables that reading each element
with int() gives: increasing PCs across chunks, repeated PCs, the longest
digit strings, and what C leaves to Python ("0x" prefixes, 19 digits)."""

from __future__ import annotations

import io
import random

import pytest

from psuite.errors import InputError
from psuite.formats import native_rows
from psuite.formats.readers import document, read_stream
from tests.psprocess.test_fast_paths import _by_tree as by_tree  # each module's {pc: count} from lxml

HEAD = (
    '<?xml version="1.0"?><hwpcreport version="0.3" mode="profile"><date>now</date><hostname>h</hostname>'
    "<hwpcprofiledata class='itimer'><profileinfo><profileevent domain='user' type='native' name='ITIMER_PROF'"
    " derived='no'><threshold>1000</threshold></profileevent></profileinfo><totalsamples>9</totalsamples>"
)


def doc(samples: list[tuple[str, str]], modules: int = 1) -> bytes:
    body = "".join(f"<sample pc='{pc}'>{n}</sample>" for pc, n in samples)
    mods = "".join(
        f"<module file='/m{i}' offset='0x0'><samples pcbase='16'>{body}</samples></module>" for i in range(modules)
    )
    return (HEAD + mods + "</hwpcprofiledata></hwpcreport>").encode()




def read(data: bytes) -> list[dict[int, int]]:
    return [m.samples for m in read_stream(io.BytesIO(data), "d.xml").modules]


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 16])
@pytest.mark.parametrize("order", ["increasing", "repeats", "shuffled"])
def test_tables_are_those_of_int_per_element(monkeypatch, chunk, order):
    rng = random.Random(chunk)
    pcs = sorted(rng.sample(range(1, 1 << 40), 3000))
    if order == "repeats":
        pcs += pcs[::7]  # the same PCs again, in later chunks
    elif order == "shuffled":
        rng.shuffle(pcs)
    samples = [(rng.choice([f"{pc:x}", f"{pc:X}", f"{pc:016x}"]), str(rng.choice([0, 1, 7, 10**17 + 3]))) for pc in pcs]
    data = doc(samples, modules=2)
    monkeypatch.setattr(document, "CHUNK", chunk)
    tables, expected = read(data), by_tree(data)
    assert tables == expected
    assert [list(t) for t in tables] == [list(t) for t in expected]  # first-seen order


def test_limits_and_what_c_leaves_to_python():
    assert native_rows.samples(["ffffffffffffffff", "0", "00000000000000001"], ["1", "2", "3"]) is None  # 17 digits
    assert native_rows.samples(["ffffffffffffffff", "0"], ["999999999999999999", "0"]) == (
        [2**64 - 1, 0],
        [10**18 - 1, 0],
        False,
    )
    assert native_rows.samples(["1", "2"], ["1", "1234567890123456789"]) is None  # 19 digits: Python's checks
    assert native_rows.samples(["0x1f"], ["1"]) is None
    assert native_rows.samples(["1g"], ["1"]) is None
    assert native_rows.samples(["1", "1"], ["1", "2"]) == ([1, 1], [1, 2], False)
    assert native_rows.samples(["\u0661"], ["1"]) is None and native_rows.samples(["1"], ["\u0661"]) is None
    data = doc([("0x1f", "2"), ("1f", "3"), ("a", "1234567890123456789")])
    assert read(data) == [{0x1F: 5, 0xA: 1234567890123456789}]


def test_bad_pc_still_gets_its_message():
    with pytest.raises(InputError, match="sample pc"):
        read(doc([("10", "1"), ("zz", "1")]))
