"""The HTML report's topology view (CUBE's, user guide 1.6): the system
pane shows a cube's Cartesian topology as a grid of cells, one per
coordinate, each coloured with the selected metric and call path's value
at the location placed there, as the system tree shows that location.

Pages are made by `psprocess --html` of real Score-P profiles with an
MPI_Cart_create (mpi1.cubex: 2 x 1 ranks; a difference of mpi2.cubex and
mpi1.cubex), their <cart>s read here with lxml and their values with
psuite.read_experiment; and of a cube written here with a 3D topology,
whose values are known in advance (rank r holds r + 1 samples)."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from selenium.webdriver.common.action_chains import ActionChains

import psuite
from tests.conftest import run_tool
from tests.psprocess.html.pages import load_page, screenshot

SCOREP = Path(__file__).resolve().parents[1] / "data" / "scorep"
LEAF = "MPI_Allreduce"  # a leaf call path of the Score-P profiles: inclusive = exclusive


def carts(path: Path) -> list[tuple[str, list[int], dict[int, tuple[int, ...]]]]:
    """A CUBE file's <cart>s read without psuite: (name, sizes, {location id: coordinates})."""
    with tarfile.open(path) as tar:
        root = etree.fromstring(tar.extractfile("anchor.xml").read(), etree.XMLParser(huge_tree=True))
    return [(c.get("name"), [int(d.get("size")) for d in c.findall("dim")],
             {int(x.get("locId")): tuple(int(v) for v in x.text.split()) for x in c.findall("coord")})
            for c in root.iter("cart")]


def html(tmp: Path, name: str, *args: str) -> Path:
    out = tmp / f"{name}.html"
    p = run_tool("psprocess", "--html", str(out), *args)
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("topology")
    diff = d / "d.cubex"
    p = run_tool("psprocess", "diff", str(SCOREP / "mpi2.cubex"), str(SCOREP / "mpi1.cubex"), "-o", str(diff))
    assert p.returncode == 0, p.stderr
    cube3d = d / "grid3d.cubex"
    write_3d_cube(cube3d)
    return {"mpi1": html(d, "mpi1", str(SCOREP / "mpi1.cubex")), "diff": html(d, "diff", str(diff)),
            "3d": html(d, "grid3d", str(cube3d))}


# -- a cube with a 3D topology ----------------------------------------------------------

SIZES = (2, 3, 4)  # x (periodic), y, z
RANKS = 23  # one place short of 2 x 3 x 4: (1, 2, 3) holds no location


def place(r: int) -> tuple[int, int, int]:
    """Rank r's coordinates: x fastest, then y, then z (r = z * 6 + y * 2 + x)."""
    return (r % 2, (r // 2) % 3, r // 6)


def write_3d_cube(path: Path) -> None:
    from psuite.formats.exporters import cube
    from psuite.model.experiment import Experiment, Location, Metric, Region, Topology

    exp = Experiment(attributes={"command": "./grid"})
    exp.add_metric(Metric("samples", "Samples", "occ", "UINT64"))
    exp.add_region(Region("main"))
    exp.add_cnode(0, None)
    for r in range(RANKS):
        exp.locations.append(Location(node="n", process=f"rank {r}", rank=r))
    exp.values["samples"] = np.array([[r + 1 for r in range(RANKS)]], dtype=np.int64)
    exp.topologies = [Topology("grid", [("x", 2, True), ("y", 3, False), ("z", 4, False)],
                               {r: place(r) for r in range(RANKS)})]
    cube.write(exp, str(path))


# -- the page ---------------------------------------------------------------------------


def show(page, which: str) -> None:
    """The system pane's view: "tree", or a topology's index."""
    page.js("const s = document.querySelector('select[data-view=system]'); s.value = arguments[0];"
            "s.dispatchEvent(new Event('change'));", which)


def grid(page) -> dict:
    """The grid shown: its shape, and per cell (row, column) its location (None: empty), value and colour."""
    return page.js("""
        const t = document.querySelector('#topology table.topogrid');
        const cells = Array.from(t.querySelectorAll('td.cell')).map(td => [+td.dataset.row, +td.dataset.col,
            td.dataset.location === '' ? null : +td.dataset.location, td.dataset.value === undefined ? null
            : td.dataset.value, getComputedStyle(td).backgroundColor, td.classList.contains('sel'), td.title]);
        return {rows: +t.dataset.rows, cols: +t.dataset.cols, trs: t.querySelectorAll('tr').length - 1, cells};""")


def cells(page) -> dict[tuple[int, int], tuple]:
    return {(r, c): (loc, None if v is None or v == "" else float(v), colour, sel, title)
            for r, c, loc, v, colour, sel, title in grid(page)["cells"]}


def tree_squares(page) -> dict[int, str]:
    """The system tree's colour square per location."""
    return dict(page.js("return Array.from(document.querySelectorAll('[data-tree=system] .row[data-location]'))"
                        ".map(r => [+r.dataset.location, getComputedStyle(r.querySelector('.sq')).backgroundColor])"))


def set_axis(page, axis: str, dim: int) -> None:
    page.js("const s = document.querySelector(`select[data-topo-axis=${arguments[0]}]`); s.value = arguments[1];"
            "s.dispatchEvent(new Event('change'));", axis, str(dim))


def set_index(page, dim: int, index: int) -> None:
    page.js("const s = document.querySelector(`input[data-topo-dim='${arguments[0]}']`); s.value = arguments[1];"
            "s.dispatchEvent(new Event('input'));", str(dim), str(index))


def click_cell(page, row: int, col: int, ctrl: bool = False) -> None:
    td = page.d.find_element("css selector", f"#topology td.cell[data-row='{row}'][data-col='{col}']")
    if ctrl:
        ActionChains(page.d).key_down("\ue009").click(td).key_up("\ue009").perform()
    else:
        td.click()


def pick_call(page, region: str) -> None:
    """Select a call path by its region's name, found (and so laid out) with the call pane's find."""
    page.js("const f = document.querySelector('input[data-find=call]'); f.value = '^' + arguments[0] + '$';"
            "f.dispatchEvent(new Event('input'));", region)
    page.click_call(region)


def selected_locations(page) -> list[int]:
    return page.js("return Array.from(document.querySelectorAll('[data-tree=system] .row.sel'))"
                   ".map(r => +r.dataset.location)")


def info(page) -> str:
    return page.js("return document.querySelector('[data-info=system]').textContent")


# -- the tests --------------------------------------------------------------------------


def _leaf(exp, name: str) -> int:
    [c] = [i for i, c in enumerate(exp.cnodes) if exp.regions[c.region].name == name]
    return c


def test_mpi_cartesian_grid_shows_the_system_trees_values(pages, driver, screenshots):
    """mpi1.cubex: MPI_Cartesian_2x1 is 2 rows x 1 column, rank 0 at (0, 0)
    and rank 1 at (1, 0); with time at MPI_Allreduce selected each cell
    holds the time the system tree shows for its rank, which is the cube's
    own (read_experiment), coloured as the tree colours it; the other
    topology (Process x Thread) is offered too."""
    want = carts(SCOREP / "mpi1.cubex")
    exp = psuite.read_experiment(str(SCOREP / "mpi1.cubex"))
    leaf = _leaf(exp, LEAF)
    # the line under the grid names the topology and its dimensions, as the <cart>s do
    dim_names = {"MPI_Cartesian_2x1": ["dimension 0", "dimension 1"], "Process x Thread": ["Process", "Thread"]}
    periodic = {"MPI_Cartesian_2x1": [True, False], "Process x Thread": [False, False]}
    page = load_page(driver, pages["mpi1"])
    options = page.js("return Array.from(document.querySelectorAll('select[data-view=system] option'))"
                      ".map(o => o.textContent)")
    assert options == ["system tree"] + [f"topology: {name}" for name, _, _ in want]
    page.select_metric("time")
    pick_call(page, LEAF)
    tree = page.location_values()
    for k, (name, sizes, coords) in enumerate(want):
        show(page, str(k))
        g = grid(page)
        assert (g["rows"], g["cols"]) == tuple(sizes) and g["trs"] == sizes[0]
        dims = zip(dim_names[name], sizes, periodic[name], strict=True)
        assert info(page).startswith("selected: machine Linux (2 locations) · ")  # the system tree's root
        assert info(page).endswith(name + ": " + " x ".join(f"{d} ({n}{', periodic' if p else ''})"
                                                               for d, n, p in dims))
        got = cells(page)
        assert len(got) == sizes[0] * sizes[1]
        squares = tree_squares(page)
        for loc, (x, y) in coords.items():
            at, value, colour, marked, title = got[(x, y)]
            assert marked  # in the selected machine
            assert at == loc
            assert value == pytest.approx(tree[loc], rel=1e-12)
            assert value == pytest.approx(float(exp.inclusive("time")[leaf, loc]), rel=1e-9)
            assert colour == squares[loc]
            assert title.startswith(f"rank {loc} ({x}, {y}): ") and title.endswith(" sec")
    # the scale ends at both ranks' time (the machine's, as the tree colours): rank 0's Allreduce took
    # 0.0162 s, 99.8 % of it (red, the ramp's end), rank 1's 2.98e-05 s, 0.2 % (blue, its start)
    show(page, "0")
    got = cells(page)
    rgb = {r: tuple(int(x) for x in re.findall(r"\d+", got[(r, 0)][2])[:3]) for r in (0, 1)}
    assert rgb[0][0] == 255 and rgb[0][1] < 8 and rgb[0][2] == 0
    assert rgb[1][0] == 0 and rgb[1][1] < 8 and rgb[1][2] == 255
    screenshot(driver, screenshots, "topology")
    page.assert_no_console_errors()


def test_grid_follows_metric_call_path_and_value_mode(pages, driver):
    """The grid shows what the system tree shows whatever is selected: visits
    at MPI_Init (one each), then time at the program's root in the system
    pane's own root percent (each rank's share of both ranks' time)."""
    exp = psuite.read_experiment(str(SCOREP / "mpi1.cubex"))
    page = load_page(driver, pages["mpi1"])
    show(page, "0")
    page.select_metric("visits")
    pick_call(page, "MPI_Init")
    got = cells(page)
    assert [got[(x, 0)][1] for x in (0, 1)] == [1, 1]
    page.select_metric("time")
    pick_call(page, "mpi_work")  # the root, open: its exclusive time
    page.set_mode("system", "root")
    got = cells(page)
    own = exp.exclusive("time")[0]
    for r in (0, 1):
        assert got[(r, 0)][1] == pytest.approx(own[r] / own.sum() * 100, rel=1e-6)
        assert got[(r, 0)][1] == pytest.approx(page.location_values()[r], rel=1e-12)
    page.assert_no_console_errors()


def test_clicking_a_cell_selects_its_location(pages, driver):
    page = load_page(driver, pages["mpi1"])
    page.select_metric("time")
    pick_call(page, LEAF)
    show(page, "0")
    click_cell(page, 1, 0)
    assert selected_locations(page) == [1]
    got = cells(page)
    assert got[(1, 0)][3] and not got[(0, 0)][3]  # the selected cell is marked
    exp = psuite.read_experiment(str(SCOREP / "mpi1.cubex"))
    v = float(exp.inclusive("time")[_leaf(exp, LEAF), 1])
    # the value on hover: the line under the grid names the cell pointed at, else the selected one
    assert info(page).startswith("rank 1 at (1, 0) = ")
    assert float(info(page).split(" = ")[1].split()[0].replace(",", "")) == pytest.approx(v, rel=1e-3)
    ActionChains(driver).move_to_element(driver.find_element("css selector", "#topology td[data-row='0']")).perform()
    assert info(page).startswith("rank 0 at (0, 0) = ")
    ActionChains(driver).move_to_element(driver.find_element("css selector", "header h1")).perform()
    assert info(page).startswith("selected: rank 1 at (1, 0) = ")
    click_cell(page, 0, 0, ctrl=True)  # Ctrl+click: one more
    assert sorted(selected_locations(page)) == [0, 1]
    show(page, "tree")
    assert page.js("return document.querySelector('[data-tree=system]').style.display") == ""
    assert sorted(selected_locations(page)) == [0, 1]
    page.assert_no_console_errors()


def test_difference_grid_shows_gains_and_losses(pages, driver):
    """psprocess diff mpi2.cubex mpi1.cubex keeps the topologies; each cell
    holds mpi2's time at MPI_Allreduce less mpi1's for its rank, green for
    a gain (less time) and red for a loss."""
    one = psuite.read_experiment(str(SCOREP / "mpi1.cubex"))
    two = psuite.read_experiment(str(SCOREP / "mpi2.cubex"))
    want = {r: float(two.inclusive("time")[_leaf(two, LEAF), r] - one.inclusive("time")[_leaf(one, LEAF), r])
            for r in (0, 1)}
    page = load_page(driver, pages["diff"])
    page.select_metric("time")
    pick_call(page, LEAF)
    tree = page.location_values()
    show(page, "0")
    g = grid(page)
    assert (g["rows"], g["cols"]) == (2, 1)
    got = cells(page)
    for r in (0, 1):
        loc, value, colour, _, _ = got[(r, 0)]
        assert loc == r and value == pytest.approx(want[r], rel=1e-6, abs=1e-12)
        assert value == pytest.approx(tree[r], rel=1e-12)
        red, green, _ = (int(x) for x in re.findall(r"\d+", colour)[:3])
        assert (green > red) if want[r] < 0 else (red > green)
    page.assert_no_console_errors()


def test_3d_topology_is_shown_as_slices(pages, driver, screenshots):
    """grid (2 x 3 x 4, rank r at (r % 2, r // 2 % 3, r // 6), 23 ranks):
    x down, y across and z fixed by a slider; z = 2 shows ranks 12 to 17
    (r + 1 samples each); z = 3 leaves (1, 2) empty; z across and x down
    with y = 1 shows ranks 2, 3, 8, 9, 14, 15, 20, 21."""
    page = load_page(driver, pages["3d"])
    show(page, "0")
    g = grid(page)
    assert (g["rows"], g["cols"]) == (2, 3)
    assert page.count("input[data-topo-dim='2']") == 1
    set_index(page, 2, 2)
    got = cells(page)
    for x in range(2):
        for y in range(3):
            r = 12 + 2 * y + x
            assert got[(x, y)][:2] == (r, r + 1)
    set_index(page, 2, 3)
    got = cells(page)
    assert got[(1, 2)][0] is None and got[(1, 2)][1] is None  # (1, 2, 3): no location
    assert got[(0, 2)][:2] == (22, 23)
    assert page.count("#topology td.cell.empty") == 1
    set_axis(page, "cols", 2)  # z across: y takes the slider
    g = grid(page)
    assert (g["rows"], g["cols"]) == (2, 4)
    assert page.count("input[data-topo-dim='1']") == 1 and page.count("input[data-topo-dim='2']") == 0
    set_index(page, 1, 1)
    got = cells(page)
    assert {(x, z): got[(x, z)][0] for x in range(2) for z in range(4)} == \
        {(x, z): z * 6 + 2 + x for x in range(2) for z in range(4)}
    set_axis(page, "rows", 2)  # z down too: x goes across in its place
    g = grid(page)
    assert (g["rows"], g["cols"]) == (4, 2)
    # the largest value (23, rank 22) is red; every cell coloured as the tree colours its rank
    squares = tree_squares(page)
    for (_, _), (loc, _, colour, _, _) in cells(page).items():
        assert colour == squares[loc]
    click_cell(page, 3, 0)  # z = 3, x = 0, y = 1: rank 20
    assert selected_locations(page) == [20]
    screenshot(driver, screenshots, "topology-3d")
    page.assert_no_console_errors()


def test_pages_without_a_topology_offer_none(pages, driver, tmp_path):
    from psuite.formats.exporters import cube
    from psuite.model.experiment import Experiment, Location, Metric, Region

    exp = Experiment(attributes={"command": "./flat"})
    exp.add_metric(Metric("samples", "Samples", "occ", "UINT64"))
    exp.add_region(Region("main"))
    exp.add_cnode(0, None)
    exp.locations.append(Location(node="n", process="rank 0", rank=0))
    exp.values["samples"] = np.array([[5]], dtype=np.int64)
    path = tmp_path / "flat.cubex"
    cube.write(exp, str(path))
    page = load_page(driver, html(tmp_path, "flat", str(path)))
    assert page.count("select[data-view=system]") == 0 and page.count("#topology") == 0
    page.assert_no_console_errors()
