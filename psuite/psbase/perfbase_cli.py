"""perfbase's command line read as psbase's: `psbase setup -d exp.xml`, `psbase input -u -d inp.xml *.dat`,
`psbase query -d qry.xml`, `psbase delete -e EXP --dontask`, ... are rewritten into psbase's own arguments
before psbase's parser sees them. An option of perfbase's that psbase does not support is one line naming
it (UsageError, exit status 2); psbase's own syntax goes through unchanged."""

from __future__ import annotations

import os
from collections.abc import Sequence

from psuite.errors import UsageError

# perfbase's getopt options per command (bin/pb_*.py): short ones taking a value, and long ones (with "="
# when they take one). What is not here is not perfbase's either, and is left to psbase's parser.
_SHORT_VALUE = {"setup": "de", "update": "d", "input": "dnesafbp", "query": "dnerf", "delete": "erp",
                "info": "erpxsd", "ls": "esmn", "attach": "enxsd", "dump": "ef", "restore": "ef", "find": "dnecsm",
                "check": "ei"}
_SHORT_FLAG = {"setup": "gfvV", "update": "vV", "input": "utimjvV", "query": "vV", "delete": "vV",
               "info": "aivV", "ls": "ladvV", "attach": "pgilvV", "dump": "vV", "restore": "vV", "find": "vV",
               "check": "afuctvV"}
_LONG = {
    "setup": ("desc=", "exp=", "get", "force"),
    "update": ("desc=",),
    "input": ("desc=", "name=", "exp=", "test", "attach=", "synopsis=", "missing=", "use-default", "force",
              "performed=", "use-mtime", "stdin", "maxmem=", "enforce=", "pset-store=", "pset-use=", "join",
              "sequential"),
    "query": ("desc=", "name=", "exp=", "run=", "fixed="),
    "delete": ("exp=", "run=", "pset=", "dontask", "force", "dbname="),
    "info": ("all", "exp=", "inventory", "run=", "pset=", "value=", "val=", "xml=", "sort=", "data=", "deleted",
             "creator=", "admin=", "input=", "query=", "any="),
    "ls": ("exp=", "long", "show=", "meta=", "nvals=", "all", "distinct"),
    "dump": ("exp=", "file="),
    "check": ("all", "exp=", "fix", "update", "clean", "tune", "index="),
    # perfbase's find lists created-from= twice and created-to= not at all (its --created-to is refused by its
    # getopt): psbase takes both, as its help names them
    "find": ("desc=", "exp=", "name=", "sort=", "synopsis=", "created-from=", "created-to=", "created-by=",
             "performed-from=", "performed-to=", "cond=", "show=", "nvals=", "meta="),
    "restore": ("exp=", "file=", "force"),
    "attach": ("exp=", "name=", "xml=", "synopsis=", "desc=", "put", "get", "delete", "list", "force", "dontask",
               "interactive"),
}
# options every perfbase command takes (pb_common): the server's address goes in psbase's --db URL instead
_COMMON_LONG = ("dbhost=", "dbport=", "dbuser=", "dbpasswd=", "verbose", "debug", "sqltrace", "profile")
_LONG_NAMES = {"-d": "--desc", "-e": "--exp", "-n": "--name", "-r": "--run", "-v": "--verbose", "-V": "--version"}
_SHORT_NAMES = {  # what a short option means differs between perfbase's commands
    "setup": {"-g": "--get", "-f": "--force"},
    "input": {"-s": "--synopsis", "-a": "--missing", "-b": "--attach", "-p": "--performed", "-u": "--use-default",
              "-t": "--test", "-i": "--stdin", "-m": "--use-mtime", "-j": "--join", "-f": "--fixed"},
    "query": {"-f": "--fixed"},
    "delete": {"-p": "--pset"},
    "info": {"-a": "--all", "-i": "--inventory", "-p": "--pset", "-x": "--xml", "-s": "--sort", "-d": "--data"},
    "ls": {"-l": "--long", "-s": "--show", "-m": "--meta", "-n": "--nvals", "-a": "--all", "-d": "--distinct"},
    "dump": {"-f": "--file"},
    "check": {"-a": "--all", "-f": "--fix", "-u": "--update", "-c": "--clean", "-t": "--tune", "-i": "--index"},
    "find": {"-c": "--cond", "-s": "--show", "-m": "--meta"},
    "restore": {"-f": "--file"},
    "attach": {"-x": "--xml", "-s": "--synopsis", "-p": "--put", "-g": "--get", "-l": "--list",
               "-i": "--interactive"},
}
# perfbase's --missing actions as psbase's --missing policies
_MISSING = {"default": "default", "abort": "abort", "ignore": "empty", "ask": "ask"}
_PSBASE_INPUT_OPTIONS = ("--desc", "--with", "--fixed", "--missing", "--merge", "--force", "--db", "-h", "--help",
                         "--synopsis", "--performed", "--use-mtime", "--test", "--pset-store", "--pset-use")


def _long_option(cmd: str, name: str) -> str | None:
    """The option spec ("desc=" or "force") of a long option of cmd (getopt's unique prefixes too), or None."""
    specs = (*_LONG.get(cmd, ()), *_COMMON_LONG)
    exact = [s for s in specs if s.rstrip("=") == name]
    found = exact or [s for s in specs if s.startswith(name)]
    return found[0] if len(found) == 1 else None


def _long_name(cmd: str, c: str) -> str:
    return _SHORT_NAMES.get(cmd, {}).get(f"-{c}") or _LONG_NAMES.get(f"-{c}", f"-{c}")


def _tokens(cmd: str, args: Sequence[str]) -> list[tuple[str, str | None]]:
    """perfbase's getopt reading of args, in order: (option, value) pairs and ("", FILE) for the
    others (gnu style: options and files mixed, "--" ends the options)."""
    out: list[tuple[str, str | None]] = []
    short_value, short_flag = _SHORT_VALUE.get(cmd, ""), _SHORT_FLAG.get(cmd, "")
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            out += [("", x) for x in args[i:]]
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name == "db":  # psbase's own --db URL, after the command
                if not eq and i < len(args):
                    value, i = args[i], i + 1
                out.append(("--db", value))
                continue
            spec = _long_option(cmd, name)
            if spec is None:
                raise UsageError(f"perfbase's {cmd} has no option --{name} (see psbase {cmd} --help)")
            if spec.endswith("="):
                if not eq:
                    if i >= len(args):
                        raise UsageError(f"--{spec.rstrip('=')} needs a value")
                    value, i = args[i], i + 1
                out.append(("--" + spec.rstrip("="), value))
            else:
                if eq:
                    raise UsageError(f"--{spec} takes no value: drop ={value}")
                out.append(("--" + spec, None))
        elif a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                if c in short_value:
                    value = a[j + 1:]
                    if not value:
                        if i >= len(args):
                            raise UsageError(f"-{c} needs a value")
                        value, i = args[i], i + 1
                    out.append((_long_name(cmd, c), value))
                    break
                if c not in short_flag:
                    raise UsageError(f"perfbase's {cmd} has no option -{c} (see psbase {cmd} --help)")
                out.append((_long_name(cmd, c), None))
                j += 1
        else:
            out.append(("", a))
    return out


def _refuse(option: str, why: str) -> UsageError:
    return UsageError(f"perfbase's {option} is not supported by psbase: {why}")


def _common(cmd: str, opt: str) -> bool:
    """perfbase's options of every command: --verbose and --sqltrace-like ones change no result (accepted);
    the server's address is psbase's --db URL."""
    if opt in ("--verbose",):
        return True
    if opt in ("--dbhost", "--dbport", "--dbuser", "--dbpasswd"):
        raise _refuse(opt, "name the archive with --db URL (postgresql+psycopg://user:password@host:port/db)")
    if opt in ("--debug", "--sqltrace", "--profile"):
        raise _refuse(opt, "psbase prints no SQL or debug trace; drop it")
    if opt == "--version":
        raise _refuse(f"{cmd} --version", "use psbase version")
    return False


def _perfbase_option(a: str) -> bool:
    """Whether a is an option of perfbase's input."""
    if a.startswith("--"):
        return _long_option("input", a[2:].split("=")[0]) is not None
    return len(a) > 1 and a[1] in _SHORT_VALUE["input"] + _SHORT_FLAG["input"]


def _is_perfbase(cmd: str, args: Sequence[str]) -> bool:
    """Whether `psbase CMD ARGS` is written in perfbase's syntax: psbase's own forms name the experiment (and
    the file of setup and update) as arguments, perfbase's give them as options (-d, -e, --exp=...)."""
    if cmd == "version":
        return True
    if cmd not in _LONG or any(a in ("-h", "--help") for a in args):
        return False
    if cmd == "input":
        from psuite.psbase.definition import NAME_RE

        firsts, skip = [], 0
        for a in args:  # the arguments that are not values of psbase's options
            if skip:
                skip -= 1
            elif a.startswith("-"):
                skip = 0 if "=" in a else {"--with": 2, "--db": 1, "--desc": 1, "--fixed": 1, "--missing": 1,
                                                    "--synopsis": 1, "--performed": 1, "--pset-store": 1,
                                                    "--pset-use": 1}.get(a, 0)
            else:
                firsts.append(a)
        # an option of perfbase's that psbase's input does not have (one of neither is left to psbase's parser)
        own = not any(a.startswith("-") and a.split("=")[0] not in _PSBASE_INPUT_OPTIONS and _perfbase_option(a)
                      for a in args)
        # psbase's experiment names are identifiers: a first argument that is not one (a file name) is
        # perfbase's `input --desc=D FILE`
        return not own or bool(firsts) and not NAME_RE.match(firsts[0]) and "--with" not in args
    if cmd == "ls":
        return any(a.startswith("-") and a.split("=")[0] not in ("--show", "--where", "--deleted", "--db")
                   for a in args)
    if cmd == "check":  # psbase's check [EXPERIMENT...] [--clean]
        return any(a.startswith("-") and a != "--clean" for a in args)
    if cmd == "find":  # psbase's find names the experiment first; perfbase's with -e
        return not args or args[0].startswith("-")
    if cmd in ("dump", "restore"):  # psbase's own forms: dump EXPERIMENT, restore [EXPERIMENT] --file DUMP
        return any(a.startswith(("-e", "--exp", "--force")) or a == "-f" or a.startswith("-f") and
                   not a.startswith("--") for a in args)
    if cmd == "attach":  # psbase's own form names the experiment first; perfbase's has --put, --xml, -e ...
        perfbase_only = ("-p", "--put", "-x", "--xml", "-e", "--exp", "-g", "-l", "-n", "-s", "-d", "--desc",
                         "--dontask", "-i", "--interactive")
        return any(a.split("=")[0] in perfbase_only if a.startswith("--") else a[:2] in perfbase_only
                   for a in args) or any(a == "--get" and (i + 1 == len(args) or args[i + 1].startswith("-"))
                                         for i, a in enumerate(args))
    if cmd in ("setup", "update"):
        return any(a == "-d" or a.startswith(("-d", "--desc", "--de")) or a in ("-g", "--get") or
                   a.startswith(("-e", "--exp")) for a in args)
    if cmd == "info" and args and not args[0].startswith("-"):
        return False  # psbase's info EXPERIMENT ... (perfbase's names it with -e)
    perfbase_only = {"query": ("-d", "--desc", "-e", "--exp", "-r", "--run", "-n", "--name"),
                     "delete": ("-e", "--exp", "-r", "--run", "-p", "--pset", "--dontask"),
                     "info": ("-e", "--exp", "-r", "--run", "-a", "--all", "-i", "--inventory", "-p",
                              "-v", "--verbose", "--val", "--value")}[cmd]
    return any(a.split("=")[0] in perfbase_only if a.startswith("--") else a[:2] in perfbase_only for a in args)


def translate(argv: Sequence[str]) -> list[str]:
    """argv (psbase's arguments) with a perfbase command line rewritten as psbase's; others unchanged."""
    argv = list(argv)
    i = 0
    while i < len(argv) and argv[i].startswith("-"):  # psbase's --db URL before the command
        i += 2 if argv[i] == "--db" else 1
    if i >= len(argv):
        return argv
    head, cmd, rest = argv[:i], argv[i], argv[i + 1:]
    if not _is_perfbase(cmd, merge_quoted(rest) if cmd == "input" else rest):
        return argv
    if cmd == "version":
        if rest:
            raise _refuse(f"version {rest[0]}", "psbase version takes no options")
        return [*head, "--version"]
    if cmd == "input":
        rest = merge_quoted(rest)
    tokens = _tokens(cmd, rest)
    db = [t for t in tokens if t[0] == "--db"]
    tokens = [t for t in tokens if t[0] != "--db"]
    global _DB
    _DB = db[0][1] if db else next((head[j + 1] for j in range(len(head) - 1) if head[j] == "--db"), None)
    return head + {"setup": _setup, "update": _update, "input": _input, "query": _query, "delete": _delete,
                   "info": _info, "ls": _ls, "attach": _attach, "dump": _dump, "restore": _restore, "find": _find,
                   "check": _check}[cmd](tokens) + (["--db", db[0][1]] if db else [])


_DB: str | None = None  # the archive named on the command line (translate), where attachments are looked up


def _experiment_by_attachment(name: str, option: str) -> str:
    """perfbase's experiment when a command names none: $PB_EXPERIMENT, else the one experiment of the
    archive with an attachment of that name."""
    env = os.environ.get("PB_EXPERIMENT", "")
    if env:
        return env
    from psuite.psbase.store import Store

    found = Store(_DB).experiments_with_attachment(name)
    if len(found) != 1:
        raise UsageError(f"{option} {name}: " + (f"experiments {', '.join(found)} have an attachment of that "
                                                 "name" if found else "no experiment has an attachment of "
                                                 "that name") + "; name the experiment with -e EXP")
    return found[0]


def _attach(tokens: list) -> list[str]:
    exp, name, xml, synopsis, desc, force, dontask = None, None, None, None, None, False, False
    actions = []
    for opt, value in tokens:
        if opt == "--exp":
            exp = value
        elif opt == "--name":
            name = value
        elif opt == "--xml":
            xml = value
        elif opt == "--synopsis":
            synopsis = value
        elif opt == "--desc":
            desc = value
        elif opt in ("--put", "--get", "--delete", "--list"):
            actions.append(opt)
        elif opt == "--force":
            force = True
        elif opt == "--dontask":
            dontask = True
        elif opt == "--interactive":
            raise _refuse("attach --interactive", "psbase does not ask: give --name, --synopsis and --desc")
        elif opt == "":
            raise UsageError(f"attach: {value} is one argument too many (the file is --xml=FILE)")
        elif not _common("attach", opt):
            raise _refuse(f"attach {opt}", "drop it")
    if len(actions) != 1:
        raise UsageError("attach needs exactly one action: --put, --get, --list or --delete")
    action = actions[0]
    if action == "--put":
        if xml is None:
            raise UsageError("attach --put needs the file: --xml=FILE")
        if xml == "-":
            raise UsageError("attach --put reads a file, not standard input: --xml=FILE")
        if exp is None:  # the file's <experiment>, as perfbase takes it
            from psuite.psbase.cli import attachment_root

            exp = (attachment_root(xml)[1].findtext("experiment") or "").strip() or \
                os.environ.get("PB_EXPERIMENT") or None
            if exp is None:
                raise UsageError(f"{xml} names no <experiment>: give it with -e EXP")
        return ["attach", exp, xml, *(["--name", name] if name else []),
                *(["--synopsis", synopsis] if synopsis is not None else []),
                *(["--description", desc] if desc is not None else []), *(["--force"] if force else [])]
    if action in ("--get", "--delete") and name is None:
        raise UsageError(f"attach {action} needs the attachment's name: --name=NAME")
    if exp is None:
        exp = _experiment_by_attachment(name, f"attach {action} --name") if name else \
            os.environ.get("PB_EXPERIMENT") or None
        if exp is None:
            raise UsageError(f"attach {action} needs the experiment: -e EXP")
    if action == "--list":
        return ["attach", exp, "--list", *(["--name", name] if name else [])]
    if action == "--delete":
        if not dontask:
            raise UsageError(f"attach --delete removes attachment {name} for good; psbase does not ask: "
                             "add --dontask")
        return ["attach", exp, "--delete", name]
    # perfbase's --get writes the file whether it exists or not
    return ["attach", exp, "--get", name, *(["-o", xml, "--force"] if xml not in (None, "-") else [])]


def _check(tokens: list) -> list[str]:
    exps, everything, clean = [], False, False
    for opt, value in tokens:
        if opt == "--exp":
            exps += [e for e in value.split(",") if e]
        elif opt == "--all":
            everything = True
        elif opt == "--clean":
            clean = True
        elif opt == "--update":
            pass  # psbase brings an archive up to date when it opens it
        elif opt in ("--fix", "--tune", "--index"):
            raise _refuse(f"check {opt}", "psbase reports what is inconsistent and changes nothing but with "
                          "--clean (the database indexes data sets itself)")
        elif opt == "":
            raise UsageError(f"check -e EXP names the experiments: {value} is one argument too many")
        elif not _common("check", opt):
            raise _refuse(f"check {opt}", "drop it")
    if everything and exps:
        raise UsageError("check: give either -e EXP[,EXP...] or --all")
    if not everything and not exps:
        env = os.environ.get("PB_EXPERIMENT")
        if not env:
            raise UsageError("check needs the experiments: -e EXP[,EXP...] or --all")
        exps = [env]
    return ["check", *exps, *(["--clean"] if clean else [])]


def _find(tokens: list) -> list[str]:
    exp, out = None, []
    for opt, value in tokens:
        if opt == "--exp":
            exp = value
        elif opt in ("--desc", "--name"):
            raise _refuse(f"find {opt} (a search description)", "give the conditions with -c NAME<op>VALUE")
        elif opt == "--verbose":
            out.append("--verbose")
        elif opt == "":
            raise UsageError(f"find -e EXP names the experiment: {value} is one argument too many")
        elif opt.startswith("--") and opt[2:] + "=" in _LONG["find"]:
            out += [opt, value]
        elif not _common("find", opt):
            raise _refuse(f"find {opt}", "drop it")
    exp = exp or os.environ.get("PB_EXPERIMENT") or None
    if exp is None:
        raise UsageError("find needs the experiment: -e EXP")
    return ["find", exp, *out]


def _dump(tokens: list) -> list[str]:
    exp, path = None, None
    for opt, value in tokens:
        if opt == "--exp":
            exp = value
        elif opt == "--file":
            path = value
        elif opt == "":
            raise UsageError(f"dump -e EXP names the experiment: {value} is one argument too many")
        elif not _common("dump", opt):
            raise _refuse(f"dump {opt}", "drop it")
    exp = exp or os.environ.get("PB_EXPERIMENT") or None
    if exp is None:
        raise UsageError("dump needs the experiment: -e EXP")
    return ["dump", exp, *(["-o", path] if path else [])]


def _restore(tokens: list) -> list[str]:
    exp, path = None, None
    for opt, value in tokens:
        if opt == "--exp":
            exp = value
        elif opt == "--file":
            path = value
        elif opt == "--force":
            raise _refuse("restore --force", "psbase restores into a new experiment only: remove the old one "
                          "first (psbase delete EXP --experiment) or give another name with -e")
        elif opt == "":
            raise UsageError(f"restore -f DUMP names the dump: {value} is one argument too many")
        elif not _common("restore", opt):
            raise _refuse(f"restore {opt}", "drop it")
    if path is None:
        raise UsageError("restore needs the dump: -f DUMP")
    return ["restore", *([exp] if exp else []), "--file", path]


def _setup(tokens: list) -> list[str]:
    desc, exp, get = None, None, False
    for opt, value in tokens:
        if opt == "--desc":
            desc = value
        elif opt == "--exp":
            exp = value
        elif opt == "--get":
            get = True
        elif opt == "":
            raise UsageError(f"setup -d names the definition: {value} is one argument too many")
        elif not _common("setup", opt):
            raise _refuse(f"setup {opt}", "an experiment that exists is changed with psbase update")
    if get:
        if exp is None:
            raise UsageError("setup -g prints an experiment's definition: name it with -e EXP")
        return ["info", exp, "--xml"]
    if desc is None:
        raise UsageError("setup needs the experiment definition: -d DEFINITION.xml")
    return ["setup", desc]


def _update(tokens: list) -> list[str]:
    descs = [v for o, v in tokens if o == "--desc"]
    for opt, value in tokens:
        if opt == "":
            raise UsageError(f"update -d names the update: {value} is one argument too many")
        if opt != "--desc" and not _common("update", opt):
            raise _refuse(f"update {opt}", "drop it")
    if len(descs) != 1:
        raise UsageError("update needs one update description: -d UPDATE.xml")
    return ["update", descs[0]]


def _experiment_of(description: str) -> str:
    """The <experiment> an input description names (perfbase files into it without -e)."""
    from lxml import etree

    from psuite.errors import InputError

    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    try:
        root = etree.parse(description, parser).getroot()
    except (OSError, etree.XMLSyntaxError) as exc:
        raise InputError(f"{description}: {exc}; fix the file or give the experiment with -e EXP") from None
    name = (root.findtext("experiment") or "").strip()
    if not name:
        name = os.environ.get("PB_EXPERIMENT", "")
    if not name:
        raise UsageError(f"{description} names no <experiment>: give it with -e EXP")
    return name


def _synopsis_of(description: str) -> str | None:
    """The <synopsis> of an input description file (None for a kept one, or a file that cannot be read: the
    import itself then says what is wrong with it)."""
    from lxml import etree

    from psuite.psbase.cli import ATTACHED

    if description.startswith(ATTACHED):
        return None
    from psuite.cli_common import read_input
    from psuite.errors import PsuiteError

    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    try:  # a regular file only (read_input): a FIFO would never end
        return etree.fromstring(read_input(description, "input description"), parser).findtext("synopsis")
    except (PsuiteError, etree.XMLSyntaxError):
        return None


def merge_quoted(args: Sequence[str]) -> list[str]:
    """perfbase's reading of its arguments (pb_common.argv_preprocess): words from one with a double quote
    to the next one with one are a single argument, the quotes dropped, so that a shell that split
    `-s "data as separator"` into three words still gives one synopsis; empty words are dropped."""
    out: list[str] = []
    pending: list[str] = []
    opened = ""  # the word that opened the quote, as given, for the message
    inside = False
    for a in args:
        if not a:
            continue
        if '"' not in a and not inside:
            out.append(a)
            continue
        opened = opened if inside else a
        inside ^= a.count('"') % 2 == 1
        pending.append(a.replace('"', ""))
        if not inside:
            out.append(" ".join(pending))
            pending = []
    if inside:
        raise UsageError(f"input: the quote opened in {opened!r} is not closed; close it or drop it")
    return out


def _experiment_of_descriptions(descs: list[str]) -> str:
    """perfbase's experiment of an input: the first description file's, else that of its attachments."""
    from psuite.psbase.cli import ATTACHED

    files = [d for d in descs if not d.startswith(ATTACHED)]
    if files:
        return _experiment_of(files[0])
    return _experiment_by_attachment(descs[0][len(ATTACHED):], "input -n")


def _input(tokens: list) -> list[str]:
    groups: list[tuple[str | None, list[str]]] = [(None, [])]  # (description, its files), in order
    enforced: set[str] = set()  # perfbase's --enforce=FILE: a file imported even if it was before
    exp, missing, use_default, force, merge = None, None, False, False, False
    fixed: list[str] = []
    meta: list[str] = []  # --synopsis, --performed, --use-mtime, --test
    for opt, value in tokens:
        if opt == "":
            groups[-1][1].append(value)  # "-": standard input
        elif opt == "--desc":
            groups.append((value, []))
        elif opt == "--exp":
            exp = value
        elif opt == "--use-default":
            use_default = True
        elif opt == "--missing":
            if value not in _MISSING:
                raise UsageError(f"input -a {value}: give default, abort, ignore or ask")
            missing = _MISSING[value]
        elif opt == "--fixed":
            fixed.append(value)
        elif opt == "--force":
            force = True
        elif opt == "--join":
            merge = True
        elif opt == "--sequential":
            pass  # the order files are read in changes no result
        elif opt == "--test":
            meta.append("--test")
        elif opt == "--synopsis":
            if value == "-":
                raise _refuse("input -s - (the synopsis from standard input)", "give the synopsis itself")
            meta += ["--synopsis", value]
        elif opt == "--performed":
            meta += ["--performed", value]
        elif opt == "--use-mtime":
            meta.append("--use-mtime")
        elif opt == "--enforce":
            groups[-1][1].append(value)
            enforced.add(value)
        elif opt in ("--pset-store", "--pset-use"):
            meta += [opt, value]
        elif opt == "--name":  # an input description kept with the experiment (attach)
            from psuite.psbase.cli import ATTACHED

            groups.append((ATTACHED + value, []))
        elif opt in ("--attach", "--stdin", "--maxmem"):
            raise _refuse(f"input {opt}", "drop it")
        elif not _common("input", opt):
            raise _refuse(f"input {opt}", "drop it")
    if groups[0][1]:
        raise UsageError(f"input: {groups[0][1][0]} comes before any -d INPUT.xml; give the description first")
    groups = groups[1:]
    if not groups:
        raise UsageError("input needs an input description: -d INPUT.xml FILE...")
    for desc, files in groups:
        if not files:
            raise UsageError(f"input -d {desc} is given no file to read")
    out = ["input", exp or _experiment_of_descriptions([d for d, _ in groups])]
    if len(groups) == 1 and not merge:
        out += [*groups[0][1], "--desc", groups[0][0]]  # the files first: psbase's parser takes "-" there
    else:  # several descriptions make one run of all their files (perfbase's manual), as --join does
        out.append("--merge")
        for desc, files in groups:
            for f in files:
                out += ["--with", desc, f]
    # perfbase aborts on a missing value unless told otherwise (-u, -a)
    if missing is not None and use_default and missing != "default":
        raise _refuse(f"input -u with -a {missing}", "psbase has one policy for missing values: give one")
    out += ["--missing", missing or ("default" if use_default else "abort")]
    out += [x for f in fixed for x in ("--fixed", f)]
    if "--synopsis" not in meta and not {"--test", "--pset-store"} & set(meta):
        # perfbase's run synopsis without -s: the <synopsis> of the first description that has one
        synopsis = next((x for x in (_synopsis_of(d) for d, _ in groups) if x), None)
        if synopsis:
            meta += ["--synopsis", synopsis]
    # psbase knows a run by all its files: it is filed again when each of them is enforced
    every = all(f in enforced for _, files in groups for f in files)
    return out + meta + (["--force"] if force or every else [])


def _query(tokens: list) -> list[str]:
    desc, fixed, exp, name = None, [], None, None
    for opt, value in tokens:
        if opt == "--exp":
            exp = value
        elif opt == "--name":
            name = value
        elif opt == "--desc":
            if value == "-":
                raise _refuse("query -d - (standard input)", "give the query file's name")
            desc = value
        elif opt == "--fixed":
            fixed += ["--fixed", value]
        elif opt == "":
            raise UsageError(f"query -d names the query: {value} is one argument too many")
        elif not _common("query", opt):
            raise _refuse(f"query {opt}", "the query file names its experiment and runs")
    if exp is not None and name is None:
        raise _refuse("query --exp", "the query file names its experiment and runs")
    if name is not None:  # the query kept with the experiment (attach)
        if desc is not None:
            raise UsageError("query takes -d QUERY.xml or -n NAME (an attached query), not both")
        from psuite.psbase.cli import ATTACHED

        return ["query", exp or _experiment_by_attachment(name, "query -n"), "--file", ATTACHED + name,
                *fixed, "--force"]
    if desc is None:
        raise UsageError("query needs a query description: -d QUERY.xml")
    # perfbase's query writes its output files whether they exist or not (pb_outputs opens them "w+")
    return ["query", "--file", desc, *fixed, "--force"]


def _delete(tokens: list) -> list[str]:
    exp, runs, dontask, psets = None, [], False, []
    for opt, value in tokens:
        if opt == "--exp":
            exp = value
        elif opt == "--run":
            runs.append(value)
        elif opt == "--dontask":
            dontask = True
        elif opt == "--force":
            pass  # perfbase's "also if the database is inconsistent": psbase's deletion is one transaction
        elif opt == "--pset":
            psets.append(value)
        elif opt == "":
            raise UsageError(f"delete -e EXP names the experiment: {value} is one argument too many")
        elif not _common("delete", opt):
            raise _refuse(f"delete {opt}", "drop it")
    if exp is None:
        raise UsageError("delete needs the experiment: -e EXP")
    if psets:  # perfbase's delete -p SET removes a parameter set
        if runs:
            raise UsageError("delete -p removes parameter sets, -r runs: give one of them")
        return ["delete", exp, *(x for p in psets for x in ("--pset", p))]
    if runs:
        return ["delete", exp, *runs]  # perfbase's deleted runs come back with undelete: psbase's restore
    if not dontask:
        raise UsageError(f"delete -e {exp} removes the experiment and all its runs for good; psbase does not "
                         "ask: add --dontask")
    return ["delete", exp, "--experiment"]


def _info(tokens: list) -> list[str]:
    exp, run, everything, pset = None, None, False, None
    shown: list[str] = []  # perfbase's layout: --verbose, --inventory, --value
    for opt, value in tokens:
        if opt == "--verbose":
            shown.append("--verbose")
        elif opt == "--inventory":
            shown.append("--inventory")
        elif opt in ("--value", "--val"):
            shown += ["--value", value]
        elif opt == "--exp":
            exp = value
        elif opt == "--run":
            run = value
        elif opt == "--all":
            everything = True
        elif opt == "--pset":
            pset = value
        elif opt == "--xml":  # perfbase's info -x NAME prints an attachment
            shown += ["--attachment", value]
        elif opt in ("--sort", "--data", "--deleted", "--creator",
                     "--admin", "--input", "--query", "--any"):
            raise _refuse(f"info {opt}", "psbase info EXPERIMENT [RUN] shows the definition or one run")
        elif opt == "":
            raise UsageError(f"info -e EXP names the experiment: {value} is one argument too many")
        elif not _common("info", opt):
            raise _refuse(f"info {opt}", "drop it")
    if everything:
        return ["ls"]
    if exp is None:
        raise UsageError("info needs the experiment: -e EXP (or --all)")
    if "--attachment" in shown:
        if run or pset is not None or len(shown) != 2:
            raise UsageError("info -x NAME prints an attachment: drop the other options")
        return ["attach", exp, "--get", shown[1]]
    if shown and (run or pset is not None):
        raise _refuse("info -r/-p with -v, -i or --value", "psbase info EXPERIMENT RUN shows one run: drop -v")
    if shown or not (run or pset is not None):  # perfbase's info -e EXP: its experiment's meta information
        # perfbase's --value lists values; the experiment's information only when no --value is given
        return ["info", exp, *([] if "--value" in shown else ["--perfbase"]), *shown]
    return ["info", exp, *([run] if run else []), *(["--pset", pset] if pset is not None else [])]


def _ls(tokens: list) -> list[str]:
    exp, show = None, []
    for opt, value in tokens:
        if opt == "--exp":
            exp = value
        elif opt == "--show":
            show.append(value)
        elif opt == "":
            raise UsageError(f"ls: {value} is one argument too many (name the experiment with -e EXP)")
        elif not _common("ls", opt):
            raise _refuse(f"ls {opt}", "psbase ls [EXPERIMENT] [--show NAMES] lists experiments or runs")
    return ["ls", *([exp] if exp else []), *(x for s in show for x in ("--show", s))]
