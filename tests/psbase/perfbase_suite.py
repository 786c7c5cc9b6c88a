"""Running perfbase's test suite (../shared/perfbase/test, read at test time) with psbase in place of perfbase:
each directory's command sequence (perfbase_suite_table) in a temporary copy of the directory, each compared
output classified as perfbase's byte for byte, the same numbers, a documented deviation (perfbase_suite_table's
ERRORS and IMPORTS, each holding as documented), refused (psbase's one line), or different."""

from __future__ import annotations

import glob
import io
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.psbase.perfbase_suite_table import ERRORS, IMPORTS, POSTSCRIPT, RENUMBERED, SUITE, Step

SUITE_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "perfbase" / "test"
VERDICTS = ("exact", "numbers", "deviation", "refused", "differ")
UNSUPPORTED = ("is not supported by psbase", "invalid choice", "has no option")  # psbase's command-line refusals
PSBASE = str(Path(sys.executable).parent / "psbase")  # the installed command
REL_TOL = 1e-6  # perfbase prints 6 significant digits and more: a numeric token within this is the same number


@dataclass
class Check:
    directory: str
    name: str  # "test_N" or the command, for return-code checks
    verdict: str
    reason: str = ""  # a refusal's line, or why the output differs
    where: str = ""  # the earlier command whose refusal the check depends on (a setup or an import)


def verify_files(directory: str) -> list[str]:
    """The recorded outputs of a directory: verify/test_N.vfy (and opendoc's test_N.ods)."""
    v = SUITE_DIR / directory / "verify"
    return sorted(p.name for p in v.iterdir()) if v.is_dir() else []


def _numbers_equal(a: str, b: str) -> bool:
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb, strict=True):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if not math.isclose(fx, fy, rel_tol=REL_TOL, abs_tol=1e-12):
            return False
    return True


def _ods_content(data: bytes) -> str:
    """An OpenDocument spreadsheet's content, one line per sheet and per non-empty cell: its place, value
    type, value, text and formatting (the cell style's properties, resolved).  The content.xml bytes are
    the writing library's (perfbase's ooolib, psbase's odfpy): what a reader of the sheet sees is compared."""
    from xml.etree import ElementTree as etree

    with zipfile.ZipFile(io.BytesIO(data)) as z:
        root = etree.fromstring(z.read("content.xml"))
    ns = {"office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
          "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
          "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
          "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0"}

    def q(name: str) -> str:
        prefix, local = name.split(":")
        return f"{{{ns[prefix]}}}{local}"

    styles = {}
    for st in root.iterfind(".//style:style", ns):
        props = sorted(f"{k.rsplit('}', 1)[-1]}={v}" for p in st for k, v in p.attrib.items())
        styles[st.get(q("style:name"))] = " ".join(props)
    lines = []
    for t in root.iterfind(".//table:table", ns):
        lines.append(f"sheet {t.get(q('table:name'))!r}")
        r = 0
        for row in t.iterfind("table:table-row", ns):
            c = 0
            for cell in row.iterfind("table:table-cell", ns):
                kind, style = cell.get(q("office:value-type")), cell.get(q("table:style-name"))
                if kind or style:
                    texts = ["".join(p.itertext()) for p in cell.iterfind("text:p", ns)]
                    value = cell.get(q("office:value"))
                    lines.append(f"{chr(ord('A') + c)}{r + 1} {kind} " + (f"value={value} " if value else "")
                                 + f"{texts!r} [{styles.get(style, style or '')}]")
                c += int(cell.get(q("table:number-columns-repeated"), "1"))
            r += int(row.get(q("table:number-rows-repeated"), "1"))
    return "\n".join(lines) + "\n"


def _commands(step: Step, cwd: Path) -> list[list[str]]:
    """The argument lists of a step: globs expanded in cwd; with each, one command per file of the last glob."""
    out = []
    for args in (step.args,) if isinstance(step.args, str) else step.args:
        words = shlex.split(args)
        expanded: list[list[str]] = [[w] for w in words]
        globbed = [i for i, w in enumerate(words) if any(c in w for c in "*?") and not w.startswith("-")]
        for i in globbed:
            expanded[i] = sorted(os.path.relpath(p, cwd) for p in glob.glob(str(cwd / words[i]))) or [words[i]]
        if step.each and globbed:
            last = globbed[-1]
            for f in expanded[last]:
                out.append([w for j, ws in enumerate(expanded) for w in ([f] if j == last else ws)])
        else:
            out.append([w for ws in expanded for w in ws])
    return out


def _psbase(argv: list[str], cwd: Path, env: dict, stdin: Path | None, merged: bool) -> tuple[int, str, str]:
    with open(stdin if stdin else os.devnull, "rb") as inp:
        p = subprocess.run([PSBASE, *argv], cwd=cwd, env=env, stdin=inp,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                           timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    err = out if merged else p.stderr.decode("utf-8", "replace")
    return p.returncode, out, err


def _first_line(text: str) -> str:
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[0].removeprefix("psbase: ")[:200] if lines else "(no message)"


def run_directory(directory: str, work: Path, db: str) -> list[Check]:
    """Run one directory's sequence in work (a copy of it) against archive db; its checks."""
    src = SUITE_DIR / directory
    shutil.copytree(src, work, dirs_exist_ok=True)
    env = {**os.environ, "PSBASE_DB": db}
    env.pop("PB_EXPERIMENT", None)
    checks: list[Check] = []
    blocked: tuple[str, str] | None = None  # (refusal, command): a refused step the checks after it depend on
    no_experiment = False  # the last setup was refused: the commands up to the next setup are not run
    last: tuple[int, str, str] = (0, "", "")
    for step in SUITE[directory]:
        if isinstance(step.args, str) and step.args.startswith("!cp "):
            _, a, b = step.args.split()
            shutil.copyfile(work / a, work / b)
            continue
        if isinstance(step.args, str) and step.args.startswith("!createuser "):
            _create_user(db, *step.args.split()[1:])
            continue
        merged = "both" in step.out
        commands = [] if step.args == "!none" else _commands(step, work)
        first = commands[0][0] if commands and commands[0] else ""
        if first == "setup":
            blocked, no_experiment = None, False
        elif no_experiment and commands:  # nothing to run against: the checks are refused by the setup
            n = len(commands) if step.each else 1
            for k in range(n):
                if step.vfy is not None or step.check:
                    name = f"test_{step.vfy + k}" if step.vfy is not None else " ".join(commands[k])
                    checks.append(Check(directory, name, "refused", *blocked))
            continue
        for k, argv in enumerate(commands if step.each else [commands] if commands else [None]):
            if step.each or commands:
                runs = [argv] if step.each else argv
                for f in step.out:
                    if f not in ("stdout", "both"):
                        (work / f).unlink(missing_ok=True)  # the scripts move each output away before the next
                as_user = {**env, "PSBASE_DB": _as_user(db, step.user)} if step.user else env
                results = [_psbase(a, work, as_user, work / step.stdin if step.stdin else None, merged)
                           for a in runs]
                rc = results[0][0]
                last = (rc, "".join(r[1] for r in results), results[0][2])
            rc, out, err = last
            vfy = None if step.vfy is None else step.vfy + k
            if vfy is None and not step.check:
                if step.rc == 0 and rc != 0 and not blocked:
                    blocked = (_first_line(err), " ".join(argv if step.each else commands[0]))
                    no_experiment = first == "setup"
                continue
            rc_ok = step.rc is None or (rc == 0) == (step.rc == 0)
            name = f"test_{vfy}" if vfy is not None else " ".join(argv if step.each else commands[0])
            # a failure the script wants is no pass when psbase refused the command line itself
            unsupported = rc == 2 and any(w in err for w in UNSUPPORTED)
            if vfy is None:  # a return code only
                if rc_ok and not unsupported:
                    checks.append(Check(directory, name, "exact"))
                elif blocked:
                    checks.append(Check(directory, name, "refused", *blocked))
                else:
                    checks.append(Check(directory, name, "refused" if rc == 2 else "differ", _first_line(err)))
                continue
            if (directory, vfy) in ERRORS or (directory, vfy) in IMPORTS:
                checks.append(_deviation(directory, name, vfy, rc, out, err, merged, blocked))
                continue
            got = _output(step, out, work)
            want = _expected(directory, vfy)
            same = got is not None and want is not None and (
                got == want or step.sort and sorted(got.splitlines()) == sorted(want.splitlines()))
            if (directory, vfy) in POSTSCRIPT and rc_ok and got is not None and want is not None and not blocked:
                drawn = before_postscript(got) != got
                mine = drawn and before_postscript(got) == before_postscript(want)
                checks.append(Check(directory, name, "deviation" if mine else "differ",
                                    "" if mine else "no PostScript drawn" if not drawn else "output differs"))
                continue
            if (directory, vfy) in RENUMBERED and rc_ok and same and not blocked:
                checks.append(Check(directory, name, "deviation", "perfbase's run numbers skip a refused import"))
                continue
            if rc_ok and same and not unsupported:
                checks.append(Check(directory, name, "exact"))
            elif rc_ok and not unsupported and got is not None and want is not None and _numbers_equal(got, want):
                checks.append(Check(directory, name, "numbers"))
            elif blocked:  # the cause upstream: a setup or import this check depends on was refused
                checks.append(Check(directory, name, "refused", *blocked))
            elif rc == 2:
                checks.append(Check(directory, name, "refused", _first_line(err)))
            else:
                why = f"return code {rc}, wanted {'0' if step.rc == 0 else 'non-zero'}" if not rc_ok else \
                      "no output file" if got is None else "output differs"
                checks.append(Check(directory, name, "differ", why))
    return checks


def _deviation(directory: str, name: str, vfy: int, rc: int, out: str, err: str, merged: bool,
               blocked: tuple[str, str] | None) -> Check:
    """A check where psbase answers as documented instead of as perfbase: perfbase's error message is psbase's one
    line on stderr naming the same thing, with exit 2 and nothing else written; a wrongly split argument imports."""
    if blocked:
        return Check(directory, name, "refused", *blocked)
    if (directory, vfy) in IMPORTS:
        ok = rc == 0
        return Check(directory, name, "deviation" if ok else "differ", "" if ok else f"return code {rc}, wanted 0")
    # what perfbase writes before its error (a warning, a test import's values) psbase writes too, on stdout
    want = _expected(directory, vfy) or ""
    m = re.search(r"^(#\* )?ERROR", want, re.M)
    before = want[:m.start()] if m else ""
    if merged and before and err.startswith(before):
        err = err.removeprefix(before)
    elif merged or not out:  # or psbase refused before writing anything
        before = ""
    lines = [x for x in err.splitlines() if x.strip()]
    wanted = ERRORS[(directory, vfy)]
    # (numbers aside: a renumbered run's warning names psbase's number of it)
    if rc != 2 or len(lines) != 1 or (not merged and re.sub(r"\d+", "#", out) != re.sub(r"\d+", "#", before)):
        return Check(directory, name, "differ", f"return code {rc} with {len(lines)} lines, wanted perfbase's error "
                                                f"as one line and exit 2: {_first_line(err)}")
    if wanted not in lines[0]:
        return Check(directory, name, "differ", f"refused for another reason than perfbase ({wanted!r} not named): "
                                                f"{_first_line(err)}")
    return Check(directory, name, "deviation", _first_line(err))


def _as_user(db: str, user: str) -> str:
    """The archive's URL for another database user (PostgreSQL); an SQLite file has no users."""
    if "://" not in db:
        return db
    from sqlalchemy.engine import make_url

    return make_url(db).set(username=user).render_as_string(hide_password=False)


def _create_user(db: str, user: str, group: str | None = None) -> None:
    """A login role on the archive's PostgreSQL server (if missing), a member of group (made if missing)."""
    if "://" not in db:
        return
    import sqlalchemy as sa

    engine = sa.create_engine(db, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as c:
            for role, login in ((group, False), (user, True)):
                if role and c.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first() \
                        is None:
                    c.execute(sa.text(f'CREATE ROLE "{role}" {"LOGIN" if login else "NOLOGIN"}'))
            if group:
                c.execute(sa.text(f'GRANT "{group}" TO "{user}"'))
    finally:
        engine.dispose()


def _output(step: Step, stdout: str, work: Path) -> str | None:
    parts = []
    for f in step.out:
        if f in ("stdout", "both"):
            parts.append(stdout)
        elif "*" in f:  # the script's `cat NAME.*`: every file of the pattern, in ls order
            names = sorted(glob.glob(str(work / f)))
            if not names:
                return None
            parts += [Path(n).read_text("utf-8", "replace") for n in names]
        elif not (work / f).is_file():
            return None
        elif f.endswith(".ods"):
            try:
                parts.append(_ods_content((work / f).read_bytes()))
            except (zipfile.BadZipFile, KeyError):
                return None
        else:
            parts.append((work / f).read_text("utf-8", "replace"))
    text = "".join(parts)
    if step.drop:
        text = "".join(x for x in text.splitlines(keepends=True) if not any(d in x for d in step.drop))
    return text


def before_postscript(text: str) -> str:
    """An output up to its PostScript (a line starting %!PS): the data and gnuplot command file that
    perfbase wrote itself, without the file gnuplot drew from them (whose prolog is gnuplot's version's)."""
    i = text.find("%!PS")
    while i > 0 and text[i - 1] != "\n":
        i = text.find("%!PS", i + 1)
    return text if i < 0 else text[:i]


def _expected(directory: str, n: int) -> str | None:
    v = SUITE_DIR / directory / "verify"
    if (v / f"test_{n}.vfy").is_file():
        return (v / f"test_{n}.vfy").read_text("utf-8", "replace")
    if (v / f"test_{n}.ods").is_file():
        return _ods_content((v / f"test_{n}.ods").read_bytes())
    return None


def table(checks: list[Check]) -> str:
    """The per-directory table, totals last."""
    lines = [f"{'directory':<14}{'checks':>7}{'exact':>7}{'numbers':>9}{'deviation':>10}{'refused':>9}{'differ':>8}  "
             "first refusal"]
    total = dict.fromkeys(VERDICTS, 0)
    for d in SUITE:
        mine = [c for c in checks if c.directory == d]
        n = {v: sum(c.verdict == v for c in mine) for v in VERDICTS}
        for v in VERDICTS:
            total[v] += n[v]
        first = next((c.reason + (f" ({c.where})" if c.where else "") for c in mine if c.verdict == "refused"), "")
        lines.append(f"{d:<14}{len(mine):>7}{n['exact']:>7}{n['numbers']:>9}{n['deviation']:>10}{n['refused']:>9}"
                     f"{n['differ']:>8}  {first[:110]}")
    lines.append(f"{'total':<14}{len(checks):>7}{total['exact']:>7}{total['numbers']:>9}{total['deviation']:>10}"
                 f"{total['refused']:>9}{total['differ']:>8}")
    return "\n".join(lines) + "\n"


def refusal_classes(checks: list[Check]) -> list[tuple[int, str]]:
    """The refusals grouped by their reason with file names and numbers blurred, largest first."""
    classes: dict[str, int] = {}
    for c in checks:
        if c.verdict == "refused":
            key = re.sub(r"\S+\.(xml|dat|tst)\b", "F", c.reason)
            key = re.sub(r"\(line \d+\)", "", key)[:140]
            classes[key] = classes.get(key, 0) + 1
    return sorted(((n, k) for k, n in classes.items()), reverse=True)
